package main

import (
	"image/color"
	"io"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/fibermpi/fibermpi/trace"
)

// maxArrows bounds the message arrows a timeline picture draws (evenly
// spaced among all); the JSON trace has them all.
const maxArrows = 400

// kindStyle is how the timeline draws a kind of span: its colour and the
// share of the row's height (nested spans are drawn thinner on top).
var kindStyle = map[trace.Kind]struct {
	c color.Color
	h float64
}{
	trace.KindColl: {color.RGBA{R: 0xf4, G: 0xc0, B: 0x6a, A: 0xff}, 0.8},
	trace.KindSend: {color.RGBA{R: 0x5b, G: 0x9b, B: 0xd5, A: 0xff}, 0.6},
	trace.KindRecv: {color.RGBA{R: 0x70, G: 0xad, B: 0x47, A: 0xff}, 0.6},
	trace.KindWait: {color.RGBA{R: 0xc0, G: 0x3a, B: 0x2b, A: 0xff}, 0.35},
	trace.KindPut:  {color.RGBA{R: 0x7b, G: 0x3f, B: 0xa0, A: 0xff}, 0.2},
}

var drawOrder = []trace.Kind{trace.KindColl, trace.KindSend, trace.KindRecv, trace.KindWait, trace.KindPut}

// timeline is a gonum plotter: one row per endpoint, time in ms along x,
// a bar per span and a line per message from its send to its match.
type timeline struct {
	d    *trace.Data
	t0   int64
	dur  float64 // ms
	rows map[int32]int
}

func newTimeline(d *trace.Data) *timeline {
	tl := &timeline{d: d, rows: map[int32]int{}}
	var t1 int64
	for i, r := range d.Ranks {
		if i == 0 || r.Start < tl.t0 {
			tl.t0 = r.Start
		}
		t1 = max(t1, r.End)
		tl.rows[r.Addr] = i
	}
	tl.dur = max(float64(t1-tl.t0)/1e6, 1e-3)
	return tl
}

func (tl *timeline) ms(t int64) float64 { return float64(t-tl.t0) / 1e6 }

// DataRange implements plot.DataRanger.
func (tl *timeline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, tl.dur, -0.5, float64(len(tl.d.Ranks)) - 0.5
}

// Plot implements plot.Plotter.
func (tl *timeline) Plot(c draw.Canvas, plt *plot.Plot) {
	tx, ty := plt.Transforms(&c)
	box := func(col color.Color, x0, x1, y, h float64) {
		a, b := tx(x0), tx(x1)
		if b-a < vg.Points(0.4) {
			b = a + vg.Points(0.4) // a short call still shows
		}
		lo, hi := ty(y-h/2), ty(y+h/2)
		c.FillPolygon(col, []vg.Point{{X: a, Y: lo}, {X: b, Y: lo}, {X: b, Y: hi}, {X: a, Y: hi}})
	}
	// Bars that touch at the picture's resolution are drawn as one, so
	// that a trace of millions of calls is a picture of thousands of bars.
	gap := vg.Points(0.3)
	for _, k := range drawOrder {
		st := kindStyle[k]
		for i, r := range tl.d.Ranks {
			var from, to float64
			open := false
			for _, rec := range r.Records {
				if rec.Kind != k {
					continue
				}
				a, b := tl.ms(rec.Start), tl.ms(rec.End)
				if open && tx(a) <= tx(to)+gap && a >= from {
					to = max(to, b)
					continue
				}
				if open {
					box(st.c, from, to, float64(i), st.h)
				}
				from, to, open = a, b, true
			}
			if open {
				box(st.c, from, to, float64(i), st.h)
			}
		}
	}
	flows := tl.d.Flows()
	step := max(1, (len(flows)+maxArrows-1)/maxArrows)
	ls := draw.LineStyle{Color: color.RGBA{R: 0x30, G: 0x30, B: 0x30, A: 0x90}, Width: vg.Points(0.5)}
	for n := 0; n < len(flows); n += step {
		f := flows[n]
		s := tl.d.Ranks[f.FromRank].Records[f.FromRec]
		m := tl.d.Ranks[f.ToRank].Records[f.ToRec]
		c.StrokeLine2(ls, tx(tl.ms(s.Start)), ty(float64(f.FromRank)), tx(tl.ms(m.Start)), ty(float64(f.ToRank)))
	}
}

// swatch is a legend entry's thumbnail: a filled square.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.c, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// drawTimeline draws the timeline of d on c, its legend in a strip at the
// right.
func drawTimeline(c draw.Canvas, d *trace.Data) {
	p, legend := timelinePlot(d)
	side := c
	c.Max.X -= vg.Points(80)
	side.Min.X = c.Max.X + vg.Points(8)
	side.Max.Y -= vg.Points(20)
	p.Draw(c)
	legend.Draw(side)
}

// timelinePlot builds the timeline picture of d and its legend.
func timelinePlot(d *trace.Data) (*plot.Plot, plot.Legend) {
	tl := newTimeline(d)
	p := plot.New()
	p.Title.Text = "timeline (lines: messages, send → match)"
	p.X.Label.Text = "time (ms)"
	p.Y.Label.Text = "endpoint"
	var ts plot.ConstantTicks
	step := max(1, (len(d.Ranks)+15)/16)
	for i, r := range d.Ranks {
		if i%step == 0 {
			ts = append(ts, plot.Tick{Value: float64(i), Label: strconv.Itoa(int(r.Addr))})
		}
	}
	p.Y.Tick.Marker = ts
	p.Y.Scale = plot.InvertedScale{Normalizer: plot.LinearScale{}}
	p.Add(tl)
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	for _, k := range drawOrder {
		name := k.String()
		if k == trace.KindWait {
			name = "parked"
		}
		legend.Add(name, swatch{kindStyle[k].c})
	}
	return p, legend
}

func writeTimelinePNG(w io.Writer, d *trace.Data, width, height int) error {
	const dpi = 144
	pt := func(px int) vg.Length { return vg.Length(px) * vg.Inch / dpi }
	cv := vgimg.NewWith(vgimg.UseWH(pt(width), pt(height)), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	drawTimeline(draw.New(cv), d)
	_, err := vgimg.PngCanvas{Canvas: cv}.WriteTo(w)
	return err
}

func writeTimelineSVG(w io.Writer, d *trace.Data, width, height int) error {
	pt := func(px int) vg.Length { return vg.Length(px) * vg.Inch / 144 }
	cv := vgsvg.New(pt(width), pt(height))
	drawTimeline(draw.New(cv), d)
	_, err := cv.WriteTo(w)
	return err
}
