package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// A Figure is one plot, written as SVG and PNG from the same gonum plot
// and inlined in the HTML page as its SVG.
type Figure struct {
	// ID names its files: figures/ID.svg and figures/ID.png.
	ID      string
	Title   string
	Caption string
	// Series are the legend's labels, in order (what the figure compares).
	Series []string
	// Sources are the addresses of the nodes whose artifacts it plots.
	Sources []string

	plot          *plot.Plot
	legend        plot.Legend // drawn right of the plot, outside its data
	legendWidth   vg.Length   // 0: no legend
	width, height vg.Length   // the plot's; the legend adds legendWidth
}

// newFigure makes a figure of p, its legend moved out of the data area to
// a column of its own on the right.
func newFigure(id, title, caption string, series, sources []string, p plotAndSize) *Figure {
	f := &Figure{ID: id, Title: title, Caption: caption, Series: series, Sources: sources, plot: p.plot, width: p.w, height: p.h}
	f.legend = p.plot.Legend
	p.plot.Legend = plot.NewLegend()
	if w := f.legend.Rectangle(draw.Canvas{}).Size().X; w > 0 {
		f.legendWidth = w + legendPad
		f.legend.Top, f.legend.Left = true, true
	}
	return f
}

// legendPad is the space between a plot and its legend.
const legendPad = 10

// draw draws the figure on a canvas of its size.
func (f *Figure) draw(c draw.Canvas) {
	if f.legendWidth == 0 {
		f.plot.Draw(c)
		return
	}
	f.plot.Draw(draw.Crop(c, 0, -f.legendWidth, 0, 0))
	title := f.plot.Title.TextStyle.Rectangle(f.plot.Title.Text).Size().Y + f.plot.Title.Padding
	f.legend.Draw(draw.Crop(c, f.width+legendPad, 0, 0, -title))
}

// plotAndSize is a plot and the size to draw it at.
type plotAndSize struct {
	plot *plot.Plot
	w, h vg.Length
}

// render writes the figure in format "svg" or "png".
func (f *Figure) render(format string) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("draw %s: %v", format, p)
		}
	}()
	var buf bytes.Buffer
	switch format {
	case "svg":
		cv := vgsvg.New(f.width+f.legendWidth, f.height)
		f.draw(draw.New(cv))
		if _, err := cv.WriteTo(&buf); err != nil {
			return nil, err
		}
	case "png":
		cv := vgimg.NewWith(vgimg.UseWH(f.width+f.legendWidth, f.height), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
		f.draw(draw.New(cv))
		if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(&buf); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("figure format %q", format)
	}
	return buf.Bytes(), nil
}

// pngDPI is the PNG files' resolution: sharp on a high-density screen.
const pngDPI = 144

// palette is Tableau 10: distinguishable, and the same in every figure
// (series i has colour i).
var palette = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, color.RGBA{0xf2, 0x8e, 0x2b, 0xff}, color.RGBA{0xe1, 0x57, 0x59, 0xff},
	color.RGBA{0x76, 0xb7, 0xb2, 0xff}, color.RGBA{0x59, 0xa1, 0x4f, 0xff}, color.RGBA{0xed, 0xc9, 0x48, 0xff},
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, color.RGBA{0xff, 0x9d, 0xa7, 0xff}, color.RGBA{0x9c, 0x75, 0x5f, 0xff},
	color.RGBA{0xba, 0xb0, 0xac, 0xff},
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// sans is the figures' typeface (gonum embeds the Liberation fonts: no
// system font is read, so every machine draws the same image).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot makes a plot with the report's fonts and title.
func newPlot(title, xlabel, ylabel string, grid bool) *plot.Plot {
	p := plot.New()
	set := func(s *draw.TextStyle, size vg.Length) {
		s.Font = sans
		s.Font.Size = size
		s.Handler = plot.DefaultTextHandler
	}
	set(&p.Title.TextStyle, 12)
	set(&p.X.Label.TextStyle, 10)
	set(&p.Y.Label.TextStyle, 10)
	set(&p.X.Tick.Label, 9)
	set(&p.Y.Tick.Label, 9)
	set(&p.Legend.TextStyle, 9)
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	if grid {
		p.Add(plotter.NewGrid())
	}
	return p
}

// seriesCI is one series of values with optional intervals, NaN where a
// category has no value (or no interval).
type seriesCI struct {
	Name      string
	Y, Lo, Hi []float64
}

// nominalX labels x = 0, 1, ... with names, slanting them when there are
// many or long ones, and returns the figure's width.
func nominalX(p *plot.Plot, names []string) vg.Length {
	ticks := make([]plot.Tick, len(names))
	long := 0
	for i, n := range names {
		ticks[i] = plot.Tick{Value: float64(i), Label: n}
		long = max(long, len([]rune(n)))
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	if len(names) > 6 || long*len(names) > 60 {
		p.X.Tick.Label.Rotation = math.Pi / 5
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	return widthFor(len(names))
}

// widthFor is a figure's width for n categories.
func widthFor(n int) vg.Length {
	return vg.Length(math.Min(16, math.Max(6, 0.45*float64(n)+2))) * vg.Inch
}

const figureHeight = 4 * vg.Inch

// valueAxis fixes a y axis to [0, top], with ticks at quarters of top.
func valueAxis(p *plot.Plot, top float64) {
	p.Y.Min, p.Y.Max = 0, top
	var ticks []plot.Tick
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
}

// dotCIFigure plots each series' value per category as a point with its
// interval, the series side by side within a category.
func dotCIFigure(title, ylabel string, categories []string, series []seriesCI) (*plot.Plot, vg.Length, error) {
	p := newPlot(title, "", ylabel, true)
	w := nominalX(p, categories)
	valueAxis(p, 100)
	n := len(series)
	for s, ser := range series {
		off := 0.0
		if n > 1 {
			off = (float64(s)/float64(n-1) - 0.5) * math.Min(0.6, 0.15*float64(n))
		}
		var pts plotter.XYs
		var errs plotter.YErrors
		var errPts plotter.XYs
		for i := range categories {
			y := ser.Y[i]
			if math.IsNaN(y) {
				continue
			}
			x := float64(i) + off
			pts = append(pts, plotter.XY{X: x, Y: y})
			if lo, hi := ser.Lo[i], ser.Hi[i]; !math.IsNaN(lo) && !math.IsNaN(hi) {
				errPts = append(errPts, plotter.XY{X: x, Y: y})
				errs = append(errs, struct{ Low, High float64 }{y - lo, hi - y})
			}
		}
		c := colorOf(s)
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, 0, err
		}
		sc.GlyphStyle.Color = c
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(3)
		if len(errPts) > 0 {
			eb, err := plotter.NewYErrorBars(yErrs{errPts, errs})
			if err != nil {
				return nil, 0, err
			}
			eb.LineStyle.Color = c
			eb.CapWidth = vg.Points(4)
			p.Add(eb)
		}
		p.Add(sc)
		p.Legend.Add(ser.Name, sc)
	}
	return p, w, nil
}

// yErrs is points with their asymmetric errors, for NewYErrorBars.
type yErrs struct {
	plotter.XYs
	plotter.YErrors
}

// linesCIFigure plots each series over numeric x as a line through its
// points with each point's interval; logX puts x on a log scale with a
// tick at each x.
func linesCIFigure(title, xlabel, ylabel string, xs []float64, series []seriesCI, logX bool, yMax float64) (*plot.Plot, error) {
	p := newPlot(title, xlabel, ylabel, true)
	valueAxis(p, yMax)
	if logX {
		p.X.Scale = plot.LogScale{}
		var ticks []plot.Tick
		for _, x := range xs {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		if len(xs) > 0 {
			p.X.Min, p.X.Max = xs[0]*0.85, xs[len(xs)-1]*1.15
		}
	}
	for s, ser := range series {
		var pts, errPts plotter.XYs
		var errs plotter.YErrors
		// Series side by side: each drawn a little to the right of the
		// one before, so that equal values keep their intervals apart.
		dodge := 1.0
		if logX && len(series) > 1 {
			dodge = math.Pow(1.04, float64(s)-float64(len(series)-1)/2)
		}
		for i, x := range xs {
			x *= dodge
			y := ser.Y[i]
			if math.IsNaN(y) {
				continue
			}
			pts = append(pts, plotter.XY{X: x, Y: y})
			if lo, hi := ser.Lo[i], ser.Hi[i]; !math.IsNaN(lo) && !math.IsNaN(hi) {
				errPts = append(errPts, plotter.XY{X: x, Y: y})
				errs = append(errs, struct{ Low, High float64 }{y - lo, hi - y})
			}
		}
		if len(pts) == 0 {
			continue
		}
		c := colorOf(s)
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		l.LineStyle.Color = c
		l.LineStyle.Width = vg.Points(1.5)
		sc.GlyphStyle.Color = c
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(2.5)
		if len(errPts) > 0 {
			eb, err := plotter.NewYErrorBars(yErrs{errPts, errs})
			if err != nil {
				return nil, err
			}
			eb.LineStyle.Color = c
			eb.CapWidth = vg.Points(4)
			p.Add(eb)
		}
		p.Add(l, sc)
		p.Legend.Add(ser.Name, l, sc)
	}
	return p, nil
}

// barsFigure draws one bar per series and category: stacked (each
// category's bars on top of one another) or side by side.
func barsFigure(title, ylabel string, categories []string, series []seriesCI, stacked bool) (*plot.Plot, vg.Length, error) {
	p := newPlot(title, "", ylabel, true)
	w := nominalX(p, categories)
	valueAxis(p, 100)
	slot := w / vg.Length(len(categories)+1) * 0.7
	barW := slot
	if !stacked && len(series) > 0 {
		barW = slot / vg.Length(len(series))
	}
	var below *plotter.BarChart
	for s, ser := range series {
		vals := make(plotter.Values, len(categories))
		for i := range categories {
			if y := ser.Y[i]; !math.IsNaN(y) {
				vals[i] = y
			}
		}
		b, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return nil, 0, err
		}
		b.Color = colorOf(s)
		b.LineStyle.Width = 0
		if stacked {
			if below != nil {
				b.StackOn(below)
			}
			below = b
		} else {
			b.Offset = barW*vg.Length(s) - slot/2 + barW/2
		}
		p.Add(b)
		p.Legend.Add(ser.Name, b)
	}
	return p, w, nil
}

// heatmapFigure draws counts[r][c] as a grid of shaded cells, each
// labelled with its count: rows top to bottom, columns left to right.
func heatmapFigure(title, xlabel, ylabel string, rows, cols []string, counts [][]int) (*plot.Plot, vg.Length, vg.Length, error) {
	p := newPlot(title, xlabel, ylabel, false)
	most := 0
	for _, r := range counts {
		for _, n := range r {
			most = max(most, n)
		}
	}
	var labels plotter.XYLabels
	for r := range rows {
		y := float64(len(rows) - 1 - r)
		for c := range cols {
			n := counts[r][c]
			shade := 0.0
			if most > 0 {
				shade = float64(n) / float64(most)
			}
			poly, err := plotter.NewPolygon(plotter.XYs{{X: float64(c) - 0.5, Y: y - 0.5}, {X: float64(c) + 0.5, Y: y - 0.5},
				{X: float64(c) + 0.5, Y: y + 0.5}, {X: float64(c) - 0.5, Y: y + 0.5}})
			if err != nil {
				return nil, 0, 0, err
			}
			poly.Color = blend(color.RGBA{0xf7, 0xfb, 0xff, 0xff}, color.RGBA{0x08, 0x51, 0x9c, 0xff}, shade)
			poly.LineStyle.Color = color.White
			poly.LineStyle.Width = vg.Points(1)
			p.Add(poly)
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(c), Y: y})
			labels.Labels = append(labels.Labels, strconv.Itoa(n))
		}
	}
	if len(labels.XYs) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return nil, 0, 0, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font = sans
			l.TextStyle[i].Font.Size = 9
			l.TextStyle[i].XAlign = draw.XCenter
			l.TextStyle[i].YAlign = draw.YCenter
			l.TextStyle[i].Handler = plot.DefaultTextHandler
			r := len(rows) - 1 - int(labels.XYs[i].Y)
			if most > 0 && float64(counts[r][int(labels.XYs[i].X)])/float64(most) > 0.55 {
				l.TextStyle[i].Color = color.White
			}
		}
		p.Add(l)
	}
	w := nominalX(p, cols)
	yt := make([]plot.Tick, len(rows))
	for r, name := range rows {
		yt[r] = plot.Tick{Value: float64(len(rows) - 1 - r), Label: name}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	p.Y.Min, p.Y.Max = -0.5, float64(len(rows))-0.5
	p.X.Min, p.X.Max = -0.5, float64(len(cols))-0.5
	h := vg.Length(math.Max(3, 0.4*float64(len(rows))+2)) * vg.Inch
	return p, w, h, nil
}

// blend is a + t(b - a), t in [0, 1].
func blend(a, b color.RGBA, t float64) color.RGBA {
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + t*(float64(y)-float64(x)))) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 0xff}
}
