package adapt_test

// What the scenarios measure, from a run's task records and trace.

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kobe/groupconc"
)

// phaseStats are one setup's figures over one phase.
type phaseStats struct {
	goodput  float64       // tasks done within their deadline, per second
	p99      time.Duration // submit to end, of the tasks admitted (not rejected)
	p99All   time.Duration // the same over the whole phase, settling included
	p99Run   time.Duration // start to end, of the tasks started once it settled
	rejected float64       // share of the tasks submitted
	timedOut float64       // share of the tasks admitted that missed their deadline
	perGroup []float64     // goodput of each group
}

// measure returns the figures of the tasks submitted during ph; the p99
// counts those submitted once it settled.
func measure(o outcome, ph phase, groups int) phaseStats {
	var s phaseStats
	s.perGroup = make([]float64, groups)
	var lat, latAll, run []time.Duration
	n, admitted, rejected, late := 0, 0, 0, 0
	for _, r := range o.records {
		if r.submitted < ph.start || r.submitted >= ph.end {
			continue
		}
		n++
		switch r.status {
		case groupconc.StatusRejected:
			rejected++
			continue
		case groupconc.StatusSuccess:
			if o.late > 0 && r.ended-r.submitted > o.late {
				late++
				break
			}
			s.perGroup[r.group]++
		default:
			late++
		}
		admitted++
		latAll = append(latAll, r.ended-r.submitted)
		if r.submitted >= ph.start+ph.settle {
			lat = append(lat, r.ended-r.submitted)
			run = append(run, r.ended-r.started)
		}
	}
	secs := (ph.end - ph.start).Seconds()
	for g := range s.perGroup {
		s.perGroup[g] /= secs
		s.goodput += s.perGroup[g]
	}
	s.p99, s.p99All, s.p99Run = quantile(lat, 0.99), quantile(latAll, 0.99), quantile(run, 0.99)
	if n > 0 {
		s.rejected = float64(rejected) / float64(n)
	}
	if admitted > 0 {
		s.timedOut = float64(late) / float64(admitted)
	}
	return s
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(int(q*float64(len(d))), len(d)-1)]
}

// settling describes how the traced limit behaved after a phase began.
type settling struct {
	mean, cv float64       // over the settled part of the phase
	after    time.Duration // from the phase's start until it stayed within ±25 % of mean
}

// settle measures the trace over ph: the mean and coefficient of variation
// of the limit once settled, and when it came within ±25 % of that mean
// for good.
func settle(o outcome, ph phase) settling {
	var vals []float64
	for _, k := range o.trace {
		if k.at >= ph.start+ph.settle && k.at < ph.end {
			vals = append(vals, float64(k.limit))
		}
	}
	var s settling
	if len(vals) == 0 {
		return s
	}
	var sum, sq float64
	for _, v := range vals {
		sum += v
	}
	s.mean = sum / float64(len(vals))
	for _, v := range vals {
		sq += (v - s.mean) * (v - s.mean)
	}
	s.cv = math.Sqrt(sq/float64(len(vals))) / s.mean
	for i := len(o.trace) - 1; i >= 0; i-- {
		k := o.trace[i]
		if k.at >= ph.end {
			continue
		}
		if k.at < ph.start {
			break
		}
		if math.Abs(float64(k.limit)-s.mean) > 0.25*s.mean {
			s.after = k.at + traceEvery - ph.start
			break
		}
	}
	return s
}

// jain returns Jain's fairness index of xs: 1 when all are equal.
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// chart draws the traced limit (*) against the capacity (-) over time,
// one column per half second (the mean limit, the capacity at its end), as
// text.
func chart(o outcome, rows int, top float64) string {
	const col = 500 * time.Millisecond
	cols := int(o.trace[len(o.trace)-1].at/col) + 1
	limit := make([]float64, cols)
	count := make([]float64, cols)
	cores := make([]float64, cols)
	for _, k := range o.trace {
		c := int(k.at / col)
		limit[c] += float64(k.limit)
		count[c]++
		cores[c] = k.cores
	}
	row := func(v float64) int { return int(math.Round(v / top * float64(rows-1))) }
	var b strings.Builder
	for r := rows - 1; r >= 0; r-- {
		var line strings.Builder
		fmt.Fprintf(&line, "%4.0f |", float64(r)*top/float64(rows-1))
		for c := range cols {
			switch {
			case count[c] > 0 && row(limit[c]/count[c]) == r:
				line.WriteByte('*')
			case row(cores[c]) == r:
				line.WriteByte('-')
			default:
				line.WriteByte(' ')
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	fmt.Fprintf(&b, "     +%s\n", strings.Repeat("-", cols))
	b.WriteString("      ")
	for c := 0; c < cols; c += 10 {
		label := fmt.Sprintf("%ds", int(time.Duration(c)*col/time.Second))
		b.WriteString(label + strings.Repeat(" ", max(10-len(label), 1)))
	}
	return strings.TrimRight(b.String(), " ") + "\n"
}
