package groupconc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A nil ctx is refused by every entry point that takes a task, with an
// error wrapping ErrInvalidTask, and nothing runs. (Await and Shutdown
// take a nil ctx as context.Background(), see their tests.)
func TestANilContextIsAnInvalidTask(t *testing.T) {
	e := newExecutor(t, builder())
	var nilCtx context.Context
	ran := false
	fn := func(context.Context) (int, error) { ran = true; return 1, nil }

	h, err := groupconc.Submit(nilCtx, e, "g", "t", fn)
	assert.Nil(t, h)
	assert.ErrorIs(t, err, groupconc.ErrInvalidTask, "Submit")
	_, err = groupconc.SubmitWith(nilCtx, e, "g", "t", fn, groupconc.SubmitOptions{Block: true})
	assert.ErrorIs(t, err, groupconc.ErrInvalidTask, "SubmitWith")
	_, err = groupconc.Do(nilCtx, e, "g", fn, groupconc.SubmitOptions{})
	assert.ErrorIs(t, err, groupconc.ErrInvalidTask, "Do")
	tasks := []groupconc.GroupTask[int]{{GroupKey: "g", TaskID: "t", Task: fn}}
	rs, err := groupconc.ExecuteAll(nilCtx, e, tasks)
	assert.Empty(t, rs)
	assert.ErrorIs(t, err, groupconc.ErrInvalidTask, "ExecuteAll")
	_, err = groupconc.ExecuteAllWith(nilCtx, e, tasks, groupconc.SubmitOptions{})
	assert.ErrorIs(t, err, groupconc.ErrInvalidTask, "ExecuteAllWith")
	assert.False(t, ran, "no task may run")
	assert.Equal(t, uint64(0), e.Stats().Submitted)
}
