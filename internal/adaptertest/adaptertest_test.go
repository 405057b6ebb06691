package adaptertest

import (
	"testing"

	"github.com/kobe/groupconc"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestGateHoldsTasksUntilReleased: a gated task starts and does not end
// until the gate opens; OK ends at once.
func TestGateHoldsTasksUntilReleased(t *testing.T) {
	e := NewExecutor(t, W2Policy())
	g := NewGate(t)
	held := Submit(t, e, "a", g.Task)
	g.WaitStarted(1)
	select {
	case <-held.Done():
		t.Fatal("a gated task ended before its gate opened")
	default:
	}
	if r := Submit(t, e, "b", OK).Wait(); r.Status != groupconc.StatusSuccess {
		t.Fatalf("OK ended %v: %v", r.Status, r.Err)
	}
	g.Release()
	if r := held.Wait(); r.Status != groupconc.StatusSuccess {
		t.Fatalf("the gated task ended %v: %v", r.Status, r.Err)
	}
}
