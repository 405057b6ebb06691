package otelgc_test

import (
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
)

// A value that is not valid UTF-8 cannot be exported (OTLP refuses it). It
// is Other, and takes no place under the cap.
func TestInvalidUTF8LabelValueIsOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		identity := func(k string) string { return k }
		o := otelgc.Options{GroupClass: identity, MaxGroupValues: 1}
		e, r := newMetrics(t, o, groupconc.NewPolicyBuilder())
		for _, key := range []string{"bad\xff", "\xc3", "good"} {
			submit(t, e, key, ok).Wait()
			synctest.Wait() // the listener has heard of the task
		}
		requirePoints(t, r, map[string]map[string]float64{
			"groupconc.group.count":       {"groupconc.group=_other": 2, "groupconc.group=good": 1},
			"groupconc.task.run.duration": {"groupconc.group=_other": 2, "groupconc.group=good": 1},
		})
	})
}

// An allowlist entry that is not valid UTF-8 keeps no series of its own.
func TestInvalidUTF8AllowlistKeyIsOther(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{GroupAllowlist: []string{"bad\xff", "acme"}}, groupconc.NewPolicyBuilder())
	submit(t, e, "bad\xff", ok).Wait()
	submit(t, e, "acme", ok).Wait()
	quiesce(t, e)
	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.group.count": {"groupconc.group=_other": 1, "groupconc.group=acme": 1},
	})
}

func TestNewRefusesAnExecutorNameNotValidUTF8(t *testing.T) {
	_, err := otelgc.New(otelgc.Options{ExecutorName: "api\xff"})
	if want := `otelgc: ExecutorName "api\xff" is not valid UTF-8`; err == nil || err.Error() != want {
		t.Fatalf("New: got %v, want %s", err, want)
	}
}
