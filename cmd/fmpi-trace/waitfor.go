package main

import (
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/fibermpi/fibermpi/trace"
)

var (
	cycleColor = color.RGBA{R: 0xc0, G: 0x20, B: 0x20, A: 0xff}
	edgeColor  = color.RGBA{R: 0x40, G: 0x40, B: 0x40, A: 0xff}
	idleColor  = color.RGBA{R: 0xb0, G: 0xb0, B: 0xb0, A: 0xff}
	nodeColor  = color.RGBA{R: 0x3b, G: 0x4c, B: 0xc0, A: 0xff}
)

// drawWaitFor draws the wait-for graph of a deadlock: the ranks on a
// circle, an arrow from each waiting rank to the rank it waits for,
// labelled with the call, the cycle in red and idle ranks in grey.
func drawWaitFor(c draw.Canvas, w *trace.WaitFor) {
	var ranks []int
	for _, e := range w.Edges {
		ranks = append(ranks, e.From, e.To)
	}
	ranks = append(ranks, w.Idle...)
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	fnt := font.Font{Typeface: "Liberation", Variant: "Sans", Size: vg.Points(11)}
	sty := text.Style{Color: color.Black, Font: fnt, XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: text.Plain{Fonts: font.DefaultCache}}
	title := sty
	title.Font.Size = vg.Points(13)
	c.FillText(title, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Max.Y - vg.Points(14)}, "wait-for graph at the deadlock report")
	if len(ranks) == 0 {
		c.FillText(sty, c.Center(), "no waits recorded")
		return
	}
	center := vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y+c.Max.Y)/2 - vg.Points(10)}
	radius := min(c.Max.X-c.Min.X, c.Max.Y-c.Min.Y)/2 - vg.Points(50)
	node := vg.Points(16)
	pos := map[int]vg.Point{}
	for i, r := range ranks {
		a := math.Pi/2 - 2*math.Pi*float64(i)/float64(len(ranks))
		pos[r] = vg.Point{X: center.X + radius*vg.Length(math.Cos(a)), Y: center.Y + radius*vg.Length(math.Sin(a))}
	}
	if len(ranks) == 1 {
		pos[ranks[0]] = center
	}
	for _, e := range w.Edges {
		from, to := pos[e.From], pos[e.To]
		col, width := edgeColor, vg.Points(1.2)
		if w.InCycle(e.From, e.To) {
			col, width = cycleColor, vg.Points(2.5)
		}
		ls := draw.LineStyle{Color: col, Width: width}
		d := to.Sub(from)
		n := vg.Length(math.Hypot(float64(d.X), float64(d.Y)))
		if n == 0 { // waits for itself
			c.StrokeLines(ls, circle(from.Add(vg.Point{X: node, Y: node}), node*0.8))
			continue
		}
		u := vg.Point{X: d.X / n, Y: d.Y / n}
		perp := vg.Point{X: -u.Y, Y: u.X}.Scale(vg.Points(4)) // a pair of opposite waits side by side
		a, b := from.Add(u.Scale(node)).Add(perp), to.Sub(u.Scale(node)).Add(perp)
		c.StrokeLine2(ls, a.X, a.Y, b.X, b.Y)
		head := vg.Points(9)
		for _, s := range []float64{0.4, -0.4} {
			sin, cos := math.Sincos(s)
			back := vg.Point{X: -u.X*vg.Length(cos) + u.Y*vg.Length(sin), Y: -u.Y*vg.Length(cos) - u.X*vg.Length(sin)}
			p := b.Add(back.Scale(head))
			c.StrokeLine2(ls, b.X, b.Y, p.X, p.Y)
		}
		label := sty
		label.Font.Size = vg.Points(9)
		label.Color = col
		mid := a.Add(b).Scale(0.5).Add(perp.Scale(2.5))
		c.FillText(label, mid, e.Call)
	}
	for _, r := range ranks {
		col := nodeColor
		if slices.Contains(w.Idle, r) {
			col = idleColor
		}
		c.SetColor(col)
		c.Fill(pathOf(circle(pos[r], node)))
		lab := sty
		lab.Color = color.White
		c.FillText(lab, pos[r], strconv.Itoa(r))
	}
	note := sty
	note.Font.Size = vg.Points(9)
	note.XAlign = draw.XLeft
	c.FillText(note, vg.Point{X: c.Min.X + vg.Points(8), Y: c.Min.Y + vg.Points(10)}, "rank → the rank it waits for; red: the cycle; grey: ranks with no caller")
}

func circle(ctr vg.Point, r vg.Length) []vg.Point {
	var ps []vg.Point
	for i := 0; i <= 32; i++ {
		a := 2 * math.Pi * float64(i) / 32
		ps = append(ps, vg.Point{X: ctr.X + r*vg.Length(math.Cos(a)), Y: ctr.Y + r*vg.Length(math.Sin(a))})
	}
	return ps
}

func pathOf(ps []vg.Point) vg.Path {
	var p vg.Path
	for i, q := range ps {
		if i == 0 {
			p.Move(q)
		} else {
			p.Line(q)
		}
	}
	p.Close()
	return p
}

func writeWaitForPNG(wr io.Writer, w *trace.WaitFor, width, height int) error {
	const dpi = 144
	pt := func(px int) vg.Length { return vg.Length(px) * vg.Inch / dpi }
	cv := vgimg.NewWith(vgimg.UseWH(pt(width), pt(height)), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	drawWaitFor(draw.New(cv), w)
	_, err := vgimg.PngCanvas{Canvas: cv}.WriteTo(wr)
	return err
}

func writeWaitForSVG(wr io.Writer, w *trace.WaitFor, width, height int) error {
	pt := func(px int) vg.Length { return vg.Length(px) * vg.Inch / 144 }
	cv := vgsvg.New(pt(width), pt(height))
	drawWaitFor(draw.New(cv), w)
	_, err := cv.WriteTo(wr)
	return err
}
