package console

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The pictures are SVG drawn on the server, laid out here: SVG presentation
// attributes place them, since the Content-Security-Policy allows no
// inline style, and they need no script.

// taskGraph is a pipeline's task graph: one column per wave
// (pipeline.Graph.Waves), each task a box with its state under the selected
// run, each dependency within the pipeline a curve from its upstream.
type taskGraph struct {
	Width, Height int
	Nodes         []graphNode
	Edges         []graphEdge
}

// graphNode is one task's box.
type graphNode struct {
	X, Y, W, H int
	Code       string
	// Label is the code, shortened to fit the box.
	Label  string
	Status statusView
	// URL explains the task under the selected run; "" without a run.
	URL string
}

// TextX and TextY place the box's label.
func (n graphNode) TextX() int { return n.X + 10 }

// TextY places the box's label on its middle line.
func (n graphNode) TextY() int { return n.Y + n.H/2 + 5 }

// graphEdge is one dependency: its SVG path and its dependency type.
type graphEdge struct {
	D, Class, Title string
}

// The task graph's geometry, in SVG units.
const (
	nodeW, nodeH   = 200, 34
	colGap, rowGap = 56, 12
	graphMargin    = 8
	labelRunes     = 22
)

// layoutGraph lays out a valid graph; status gives each task's state under
// the selected run and url its link ("" for none).
func layoutGraph(g *pipeline.Graph, status func(t *pipeline.Task) statusView, url func(t *pipeline.Task) string) taskGraph {
	var out taskGraph
	at := map[int64]graphNode{}
	rows := 0
	for col, wave := range g.Waves() {
		for row, t := range wave {
			n := graphNode{X: graphMargin + col*(nodeW+colGap), Y: graphMargin + row*(nodeH+rowGap), W: nodeW, H: nodeH,
				Code: t.Code, Label: shorten(t.Code, labelRunes), Status: status(t), URL: url(t)}
			at[t.ID] = n
			out.Nodes = append(out.Nodes, n)
			out.Width = max(out.Width, n.X+nodeW+graphMargin)
		}
		rows = max(rows, len(wave))
	}
	out.Height = graphMargin*2 + max(rows*(nodeH+rowGap)-rowGap, 0)
	for _, t := range g.Tasks {
		to := at[t.ID]
		for _, d := range t.Deps {
			from, ok := at[d.UpstreamTaskID]
			if d.CrossPipeline || !ok {
				continue
			}
			x1, y1, x2, y2 := from.X+from.W, from.Y+from.H/2, to.X, to.Y+to.H/2
			out.Edges = append(out.Edges, graphEdge{
				D:     fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", x1, y1, x1+colGap/2, y1, x2-colGap/2, y2, x2, y2),
				Class: "dep dep-" + strings.ToLower(d.Type), Title: d.Label() + " → " + t.Code + " (" + d.Type + ")"})
		}
	}
	return out
}

// shorten cuts s to n runes, marking the cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// gantt is a run's attempts on a time axis: a row per task, in the order
// they first started, a bar per attempt.
type gantt struct {
	Width, Height int
	Rows          []ganttRow
	Ticks         []ganttTick
	// AxisY is where the axis line is drawn.
	AxisY int
}

// ganttRow is one task's attempts.
type ganttRow struct {
	Y, TextY int
	Task     string
	Bars     []ganttBar
}

// ganttBar is one attempt.
type ganttBar struct {
	X, Y, W, H int
	Status     statusView
	Title      string
	URL        string
}

// ganttTick is a label of the time axis: the time since the first attempt
// started.
type ganttTick struct {
	X     int
	Label string
}

// The Gantt chart's geometry, in SVG units.
const (
	ganttLabelW = 200
	ganttBarsW  = 760
	ganttRowH   = 26
	ganttTicks  = 5
)

// ganttAttempt is what the chart draws of one attempt.
type ganttAttempt struct {
	Task     string
	Attempt  records.Attempt
	LogURL   string
	Duration string
}

// layoutGantt lays out the attempts that started; those still running end
// at now.
func layoutGantt(attempts []ganttAttempt, now time.Time) gantt {
	var start, end time.Time
	firstStart := map[string]time.Time{}
	for _, a := range attempts {
		s := a.Attempt.StartedAt
		if !s.Valid {
			continue
		}
		if start.IsZero() || s.Time.Before(start) {
			start = s.Time
		}
		if f, ok := firstStart[a.Task]; !ok || s.Time.Before(f) {
			firstStart[a.Task] = s.Time
		}
		end = later(end, ending(a.Attempt, now))
	}
	var out gantt
	if start.IsZero() {
		return out
	}
	total := max(end.Sub(start), time.Second)
	scale := func(t time.Time) int {
		return ganttLabelW + int(float64(ganttBarsW)*float64(t.Sub(start))/float64(total))
	}
	tasks := make([]string, 0, len(firstStart))
	for t := range firstStart {
		tasks = append(tasks, t)
	}
	sort.Slice(tasks, func(i, j int) bool {
		a, b := firstStart[tasks[i]], firstStart[tasks[j]]
		return a.Before(b) || a.Equal(b) && tasks[i] < tasks[j]
	})
	row := map[string]int{}
	for i, t := range tasks {
		row[t] = len(out.Rows)
		y := i * ganttRowH
		out.Rows = append(out.Rows, ganttRow{Y: y, TextY: y + ganttRowH/2 + 5, Task: shorten(t, labelRunes)})
	}
	for _, a := range attempts {
		s := a.Attempt.StartedAt
		if !s.Valid {
			continue
		}
		r := &out.Rows[row[a.Task]]
		x := scale(s.Time)
		st := statusOf(string(a.Attempt.Status))
		r.Bars = append(r.Bars, ganttBar{X: x, Y: r.Y + 4, H: ganttRowH - 8, W: max(scale(ending(a.Attempt, now))-x, 2), Status: st,
			Title: fmt.Sprintf("%s attempt %d: %s, %s", a.Task, a.Attempt.AttemptNumber, st.Word, a.Duration), URL: a.LogURL})
	}
	out.AxisY = len(out.Rows) * ganttRowH
	for i := 0; i <= ganttTicks; i++ {
		d := total * time.Duration(i) / ganttTicks
		out.Ticks = append(out.Ticks, ganttTick{X: ganttLabelW + ganttBarsW*i/ganttTicks, Label: "+" + span(d)})
	}
	out.Width, out.Height = ganttLabelW+ganttBarsW+40, out.AxisY+24
	return out
}

// ending is when an attempt ended, or now while it runs.
func ending(a records.Attempt, now time.Time) time.Time {
	if a.EndedAt.Valid {
		return a.EndedAt.Time
	}
	return now
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
