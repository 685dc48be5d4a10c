package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/fibermpi/fibermpi/trace"
)

// grid is one count of a communication matrix as gonum's GridXYZ: column
// c is the receiver, row r the sender, and the value the count's decimal
// logarithm (NaN for zero), so that 16-byte and megabyte messages both
// show.
type grid struct {
	v [][]int64
}

func (g grid) Dims() (c, r int) { return len(g.v), len(g.v) }
func (g grid) Z(c, r int) float64 {
	if x := g.v[r][c]; x > 0 {
		return math.Log10(float64(x))
	}
	return math.NaN()
}
func (g grid) X(c int) float64 { return float64(c) }
func (g grid) Y(r int) float64 { return float64(r) }

// ticks labels the positions 0..n-1 with the endpoints' addresses, at most
// about 16 labels.
func ticks(addrs []int32) plot.ConstantTicks {
	step := max(1, (len(addrs)+15)/16)
	var ts plot.ConstantTicks
	for i, a := range addrs {
		if i%step == 0 {
			ts = append(ts, plot.Tick{Value: float64(i), Label: strconv.Itoa(int(a))})
		}
	}
	return ts
}

// zeroColor fills the cells of pairs that exchanged nothing.
var zeroColor = color.RGBA{R: 0xf2, G: 0xf2, B: 0xf2, A: 0xff}

// panel draws one heat map (title, counts) and its colour bar on c.
func panel(c draw.Canvas, title, unit string, addrs []int32, v [][]int64) error {
	// The colour scale is logarithmic: lo and hi are decimal logarithms.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range v {
		for _, x := range row {
			if x > 0 {
				l := math.Log10(float64(x))
				lo, hi = min(lo, l), max(hi, l)
			}
		}
	}
	switch {
	case math.IsInf(hi, -1): // nothing sent at all
		lo, hi = 0, 1
	case hi-lo < 1:
		lo = hi - 1
	}
	cm := moreland.SmoothBlueRed()
	cm.SetMin(lo)
	cm.SetMax(hi)
	pal := cm.Palette(255)

	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "receiver (endpoint)"
	p.Y.Label.Text = "sender (endpoint)"
	p.X.Tick.Marker = ticks(addrs)
	p.Y.Tick.Marker = ticks(addrs)
	p.Y.Scale = plot.InvertedScale{Normalizer: plot.LinearScale{}}
	hm := plotter.NewHeatMap(grid{v}, pal)
	hm.Min, hm.Max = lo, hi
	hm.Underflow = zeroColor
	hm.NaN = zeroColor // zero: nothing sent
	p.Add(hm)
	if n := len(addrs); n > 0 && n <= 12 {
		// Small matrices: the numbers in the cells.
		var xy plotter.XYLabels
		for r, row := range v {
			for col, x := range row {
				if x > 0 {
					xy.XYs = append(xy.XYs, plotter.XY{X: float64(col), Y: float64(r)})
					xy.Labels = append(xy.Labels, human(x, unit))
				}
			}
		}
		if len(xy.XYs) > 0 {
			lab, err := plotter.NewLabels(xy)
			if err != nil {
				return err
			}
			for i := range lab.TextStyle {
				lab.TextStyle[i].XAlign, lab.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
				lab.TextStyle[i].Font.Size = vg.Points(max(5, 14-float64(n)))
			}
			p.Add(lab)
		}
	}

	bar := plot.New()
	bar.Title.Text = unit
	bar.HideX()
	bar.Y.Padding = 0
	var bt plot.ConstantTicks
	for k := math.Ceil(lo); k <= math.Floor(hi); k++ {
		bt = append(bt, plot.Tick{Value: k, Label: human(int64(math.Round(math.Pow(10, k))), unit)})
	}
	bar.Y.Tick.Marker = bt
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})

	barW := vg.Points(70)
	main := c
	main.Max.X -= barW
	side := c
	side.Min.X = main.Max.X + vg.Points(6)
	side.Min.Y += vg.Points(30)
	side.Max.Y -= vg.Points(10)
	p.Draw(main)
	bar.Draw(side)
	return nil
}

// human prints a count briefly: 1.5k, 20M.
func human(x int64, unit string) string {
	f := float64(x)
	for _, s := range []string{"", "k", "M", "G", "T"} {
		if f < 1000 || s == "T" {
			if s == "" {
				return strconv.FormatInt(x, 10)
			}
			return strconv.FormatFloat(f, 'f', 1-min(1, int(math.Log10(f))), 64) + s
		}
		f /= 1000
	}
	return strconv.FormatInt(x, 10)
}

// drawMatrix draws the bytes and the messages panels side by side.
func drawMatrix(c draw.Canvas, m trace.Matrix) error {
	w := c.Max.X - c.Min.X
	left, right := c, c
	left.Max.X = c.Min.X + w/2
	right.Min.X = left.Max.X + vg.Points(10)
	if err := panel(left, "bytes sent", "bytes", m.Addrs, m.Bytes); err != nil {
		return err
	}
	return panel(right, "messages sent", "msgs", m.Addrs, m.Msgs)
}

// writeMatrixPNG draws the matrix as a PNG of width×height pixels.
func writeMatrixPNG(w io.Writer, m trace.Matrix, width, height int) error {
	const dpi = 144
	pt := func(px int) vg.Length { return vg.Length(px) * vg.Inch / dpi }
	cv := vgimg.NewWith(vgimg.UseWH(pt(width), pt(height)), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	if err := drawMatrix(draw.New(cv), m); err != nil {
		return err
	}
	_, err := vgimg.PngCanvas{Canvas: cv}.WriteTo(w)
	return err
}

// writeMatrixSVG draws the matrix as an SVG of the same size in points as
// the PNG at 144 dpi.
func writeMatrixSVG(w io.Writer, m trace.Matrix, width, height int) error {
	pt := func(px int) vg.Length { return vg.Length(px) * vg.Inch / 144 }
	cv := vgsvg.New(pt(width), pt(height))
	if err := drawMatrix(draw.New(cv), m); err != nil {
		return err
	}
	_, err := cv.WriteTo(w)
	return err
}

// writeMatrixText prints the matrix as a table of bytes (messages).
func writeMatrixText(w io.Writer, m trace.Matrix) {
	fmt.Fprintf(w, "%8s", "from\\to")
	for _, a := range m.Addrs {
		fmt.Fprintf(w, " %14d", a)
	}
	fmt.Fprintln(w)
	for i, a := range m.Addrs {
		fmt.Fprintf(w, "%8d", a)
		for j := range m.Addrs {
			if m.Msgs[i][j] == 0 {
				fmt.Fprintf(w, " %14s", ".")
				continue
			}
			fmt.Fprintf(w, " %14s", human(m.Bytes[i][j], "")+"B/"+human(m.Msgs[i][j], ""))
		}
		fmt.Fprintln(w)
	}
}
