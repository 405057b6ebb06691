package redisgc

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/kobe/groupconc"
	"github.com/redis/go-redis/v9"
)

// replicaExec is a child's executor, on group "t", and its Coordinator.
type replicaExec struct {
	coord    *Coordinator
	submit   func(f func()) error
	stats    func() (running, limit int)
	shutdown func() // waits for every submitted task
}

func newReplicaExec(client redis.Scripter, o Options) (*replicaExec, error) {
	exec := groupconc.New(nil)
	c, err := New(client, exec, o)
	if err != nil {
		return nil, err
	}
	var ids atomic.Int64
	return &replicaExec{
		coord: c,
		submit: func(f func()) error {
			id := strconv.FormatInt(ids.Add(1), 10)
			_, err := groupconc.Submit(context.Background(), exec, "t", id, func(context.Context) (struct{}, error) {
				f()
				return struct{}{}, nil
			})
			return err
		},
		stats: func() (int, int) {
			s, _ := exec.GroupStats("t")
			return s.Running, max(s.MaxConcurrency, 1)
		},
		shutdown: func() { _ = exec.Shutdown(context.Background()) },
	}, nil
}
