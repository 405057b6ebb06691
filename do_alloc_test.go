package groupconc_test

import (
	"context"
	"testing"

	"github.com/kobe/groupconc"
)

// A Do that need not wait allocates one record, and so does a Do inside a
// task. Asking a context whether it is a task's, and whether that task
// holds permits, must not add one: the keys are one pointer each.
func TestADoThatNeedNotWaitAllocatesOnlyItsRecord(t *testing.T) {
	e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4)))
	defer e.Close()
	fn := func(context.Context) (int, error) { return 0, nil }
	do := func(ctx context.Context) {
		if _, err := groupconc.Do(ctx, e, "g", fn, groupconc.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := leastAllocs(50, func() { do(context.Background()) }); n != 1 {
		t.Errorf("a Do allocates %v times, want 1 (its record)", n)
	}
	// Inside a task of another group, whose context the Do is given.
	var inside float64
	_, err := groupconc.Do(context.Background(), e, "outer", func(ctx context.Context) (int, error) {
		inside = leastAllocs(50, func() { do(ctx) })
		return 0, nil
	}, groupconc.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if inside != 1 {
		t.Errorf("a Do inside a task allocates %v times, want 1 (its record)", inside)
	}
}
