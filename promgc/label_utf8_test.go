package promgc_test

import (
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// A label value that is not valid UTF-8 would fail the whole scrape. It is
// Other, and takes no place under the cap.
func TestInvalidUTF8LabelValueIsOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		identity := func(k string) string { return k }
		o := promgc.Options{GroupClass: identity, MaxGroupValues: 1, Buckets: []float64{1}}
		e, c := newMetrics(t, o, groupconc.NewPolicyBuilder())
		for _, key := range []string{"bad\xff", "\xc3", "good"} {
			submit(t, e, key, ok).Wait()
			synctest.Wait() // the listener has heard of the task
		}
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(c))
		_, err := reg.Gather()
		require.NoError(t, err)
		requireMetrics(t, c, `
			groupconc_groups{group="_other"} 2
			groupconc_groups{group="good"} 1
			groupconc_task_run_seconds_bucket{group="_other",le="1"} 2
			groupconc_task_run_seconds_bucket{group="_other",le="+Inf"} 2
			groupconc_task_run_seconds_sum{group="_other"} 0
			groupconc_task_run_seconds_count{group="_other"} 2
			groupconc_task_run_seconds_bucket{group="good",le="1"} 1
			groupconc_task_run_seconds_bucket{group="good",le="+Inf"} 1
			groupconc_task_run_seconds_sum{group="good"} 0
			groupconc_task_run_seconds_count{group="good"} 1
		`)
	})
}

// An allowlist entry that is not valid UTF-8 keeps no series of its own.
func TestInvalidUTF8AllowlistKeyIsOther(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{GroupAllowlist: []string{"bad\xff", "acme"}}, groupconc.NewPolicyBuilder())
	submit(t, e, "bad\xff", ok).Wait()
	submit(t, e, "acme", ok).Wait()
	requireMetrics(t, c, `
		groupconc_groups{group="_other"} 1
		groupconc_groups{group="acme"} 1
	`)
}

func TestNewRefusesAnExecutorNameNotValidUTF8(t *testing.T) {
	_, err := promgc.New(promgc.Options{ExecutorName: "api\xff"})
	if want := `promgc: ExecutorName "api\xff" is not valid UTF-8`; err == nil || err.Error() != want {
		t.Fatalf("New: got %v, want %s", err, want)
	}
}
