package redisgc

import "github.com/redis/go-redis/v9"

// replicaExec is a child's executor, on group "t", and its Coordinator.
type replicaExec struct {
	coord    *Coordinator
	submit   func(f func())
	stats    func() (running, limit int)
	shutdown func() // waits for every submitted task
}

func newReplicaExec(client redis.Scripter, o Options) (*replicaExec, error) {
	s := newSimExec()
	c, err := newCoordinator(client, s, o)
	if err != nil {
		return nil, err
	}
	return &replicaExec{
		coord:    c,
		submit:   func(f func()) { s.submit("t", f) },
		stats:    func() (int, int) { return s.stats("t") },
		shutdown: s.wg.Wait,
	}, nil
}
