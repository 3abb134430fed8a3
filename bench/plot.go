package main

import (
	"fmt"
	"image/color"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

var (
	libColor  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	rawColor  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	sameColor = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// writePlot draws throughput against goroutines, library and baseline,
// one panel per backend (rows) and path (columns), as an SVG file.
func writePlot(file string, rows []row) error {
	var backends []string
	seen := map[string]bool{}
	byKey := map[string][]row{}
	for _, r := range rows {
		if !seen[r.backend] {
			seen[r.backend] = true
			backends = append(backends, r.backend)
		}
		k := r.backend + "\x00" + r.path.String()
		byKey[k] = append(byKey[k], r)
	}
	if len(backends) == 0 {
		return fmt.Errorf("nothing to plot")
	}
	plots := make([][]*plot.Plot, len(backends))
	for i, b := range backends {
		plots[i] = make([]*plot.Plot, numPaths)
		for p := range numPaths {
			pl, err := panel(b, p, byKey[b+"\x00"+p.String()])
			if err != nil {
				return err
			}
			plots[i][p] = pl
		}
	}
	const w, h = 16 * vg.Centimeter * 2, 9 * vg.Centimeter
	height := h * vg.Length(len(backends))
	tiles := draw.Tiles{Rows: len(backends), Cols: int(numPaths), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	render := func(c vg.CanvasWriterTo, name string) error {
		dc := draw.New(c)
		canvases := plot.Align(plots, tiles, dc)
		for i := range plots {
			for j := range plots[i] {
				plots[i][j].Draw(canvases[i][j])
			}
		}
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		if _, err := c.WriteTo(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	// The SVG for the README; a PNG of the same plot for viewers that
	// do not render SVG.
	if err := render(vgsvg.New(w, height), file); err != nil {
		return err
	}
	return render(vgimg.PngCanvas{Canvas: vgimg.New(w, height)}, strings.TrimSuffix(file, ".svg")+".png")
}

func panel(backend string, p path, rows []row) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = backend + ": " + p.String()
	pl.X.Label.Text = "goroutines"
	pl.Y.Label.Text = "ops/s"
	// A log scale needs two goroutine counts: one alone (-goroutines 1)
	// gives an axis range gonum pads down to 0, where the log scale panics.
	if len(rows) > 1 {
		pl.X.Scale = plot.LogScale{}
	}
	pl.Y.Min = 0
	var ticks []plot.Tick
	lib, raw, same := make(plotter.XYs, len(rows)), make(plotter.XYs, len(rows)), plotter.XYs{}
	for i, r := range rows {
		x := float64(r.goroutines)
		lib[i] = plotter.XY{X: x, Y: r.lib.OpsPerSec()}
		raw[i] = plotter.XY{X: x, Y: r.raw.OpsPerSec()}
		if r.hasSame {
			same = append(same, plotter.XY{X: x, Y: r.same.OpsPerSec()})
		}
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.Itoa(r.goroutines)})
	}
	pl.X.Tick.Marker = plot.ConstantTicks(ticks)
	type line struct {
		name string
		xys  plotter.XYs
		c    color.Color
		dash []vg.Length
	}
	lines := []line{{"library", lib, libColor, nil}, {"raw baseline", raw, rawColor, []vg.Length{vg.Points(4), vg.Points(2)}}}
	if len(same) > 0 {
		lines = append(lines, line{"same statements", same, sameColor, []vg.Length{vg.Points(1), vg.Points(2)}})
	}
	for _, s := range lines {
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Dashes, pts.Color = s.c, s.dash, s.c
		pl.Add(l, pts)
		pl.Legend.Add(s.name, l)
	}
	pl.Legend.Top = true
	pl.Y.Tick.Marker = plot.DefaultTicks{}
	pl.Add(plotter.NewGrid())
	return pl, nil
}
