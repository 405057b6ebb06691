// Command quickstart runs a small workload in three groups with different
// concurrency limits and draws what happened as a timeline. It has one row
// per task, waiting as dots and running as a bar, on a shared time axis.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kobe/groupconc"
)

const width = 60 // columns of the time axis

// group is one group of the workload: its limit and how long each of its
// tasks works.
type group struct {
	key   string
	limit int
	work  []time.Duration
}

var workload = []group{
	{"reports", 1, ms(300, 350, 350, 300, 400, 400)},
	{"emails", 2, ms(400, 200, 300, 350, 250, 400)},
	{"thumbnails", 3, ms(300, 400, 150, 350, 250, 200)},
}

func main() {
	limits := map[string]int{}
	for _, g := range workload {
		limits[g.key] = g.limit
	}
	policy, err := groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(limits).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	e := groupconc.New(policy)
	defer e.Close()

	var tasks []groupconc.GroupTask[time.Duration]
	for _, g := range workload {
		for i, d := range g.work {
			tasks = append(tasks, groupconc.GroupTask[time.Duration]{
				GroupKey: g.key,
				TaskID:   fmt.Sprintf("%s-%d", g.key, i+1),
				Task:     work(d),
			})
		}
	}

	// Every task is submitted at once. Each group lets at most its limit
	// run, and the groups do not wait for each other.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results, err := groupconc.ExecuteAll(ctx, e, tasks)
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}

	draw(os.Stdout, results)
}

// work returns a task that pretends to work for d, or stops early if it is
// cancelled.
func work(d time.Duration) groupconc.Task[time.Duration] {
	return func(ctx context.Context) (time.Duration, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return d, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// draw prints the timeline of results and, per group, the largest number of
// tasks seen running at once.
func draw(w io.Writer, results []groupconc.GroupResult[time.Duration]) {
	t0, t1 := results[0].Submitted, results[0].End
	for _, r := range results {
		if r.Submitted.Before(t0) {
			t0 = r.Submitted
		}
		if r.End.After(t1) {
			t1 = r.End
		}
	}
	span := t1.Sub(t0)
	// col maps an instant to a column. Rounding is monotonic and a task
	// starts no earlier than the previous holder of its permit ended, so
	// two tasks that did not overlap in time never share a column.
	col := func(t time.Time) int {
		return int((float64(t.Sub(t0))/float64(span))*width + 0.5)
	}

	fmt.Fprintf(w, "%d tasks in %d groups, %v in all    %s waiting  %s running\n\n",
		len(results), len(workload), span.Round(10*time.Millisecond), "·", "█")
	label := 16
	fmt.Fprintf(w, "%-*s %s\n", label, "", axis(span))
	for _, g := range workload {
		fmt.Fprintf(w, "%s (limit %d)\n", g.key, g.limit)
		running := make([]int, width)
		// Rows in the order the tasks started, so the queue reads as a
		// staircase.
		var rows []groupconc.GroupResult[time.Duration]
		for _, r := range results {
			if r.GroupKey == g.key {
				rows = append(rows, r)
			}
		}
		slices.SortStableFunc(rows, func(a, b groupconc.GroupResult[time.Duration]) int {
			return a.Start.Compare(b.Start)
		})
		for _, r := range rows {
			row := []rune(strings.Repeat(" ", width))
			from, start, end := col(r.Submitted), col(r.Start), col(r.End)
			for c := from; c < start && c < width; c++ {
				row[c] = '·'
			}
			for c := start; c < end && c < width; c++ {
				row[c] = '█'
				running[c]++
			}
			mark := ""
			if r.Status != groupconc.StatusSuccess {
				mark = " " + r.Status.String()
			}
			fmt.Fprintf(w, "  %-*s|%s|%s\n", label-2, r.TaskID, string(row), mark)
		}
		fmt.Fprintf(w, "  %-*s|%s|\n", label-2, "running", digits(running))
	}

	fmt.Fprintln(w)
	for _, g := range workload {
		got := maxOverlap(results, g.key)
		verdict := "ok"
		if got > g.limit {
			verdict = "LIMIT EXCEEDED"
		}
		fmt.Fprintf(w, "%-10s limit %d, max running at once %d: %s\n", g.key, g.limit, got, verdict)
	}
}

// axis returns the time axis: a tick every 10 columns, labelled in seconds.
func axis(span time.Duration) string {
	var b strings.Builder
	for c := 0; c < width; c += 10 {
		at := time.Duration(float64(span) * float64(c) / width)
		fmt.Fprintf(&b, "%-10s", fmt.Sprintf("|%.1fs", at.Seconds()))
	}
	return b.String()
}

// digits renders how many bars cover each column.
func digits(counts []int) string {
	var b strings.Builder
	for _, n := range counts {
		if n == 0 {
			b.WriteByte(' ')
		} else {
			fmt.Fprintf(&b, "%d", n)
		}
	}
	return b.String()
}

// maxOverlap returns the largest number of key's tasks whose [Start, End)
// intervals overlap, computed from the results alone.
func maxOverlap(results []groupconc.GroupResult[time.Duration], key string) int {
	type event struct {
		at    time.Time
		delta int
	}
	var events []event
	for _, r := range results {
		if r.GroupKey == key && r.Status == groupconc.StatusSuccess {
			events = append(events, event{r.Start, +1}, event{r.End, -1})
		}
	}
	// At equal instants an end comes before a start: a task that starts as
	// another ends does not overlap it.
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, ev := range events {
		n += ev.delta
		most = max(most, n)
	}
	return most
}

func ms(v ...int) []time.Duration {
	d := make([]time.Duration, len(v))
	for i, n := range v {
		d[i] = time.Duration(n) * time.Millisecond
	}
	return d
}
