package redisgc

import "sync"

// simExec is a minimal executor with live limits, standing in for
// groupconc's: a raised limit starts waiting tasks at once, a lowered one
// lets running tasks finish and starts nothing until running is below it.
type simExec struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	limits  map[string]int      // guarded by mu
	running map[string]int      // guarded by mu
	queue   map[string][]func() // guarded by mu
}

func newSimExec() *simExec {
	return &simExec{limits: map[string]int{}, running: map[string]int{}, queue: map[string][]func(){}}
}

func (s *simExec) limitLocked(g string) int { return max(s.limits[g], 1) }

func (s *simExec) submit(g string, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue[g] = append(s.queue[g], f)
	s.startLocked(g)
}

func (s *simExec) startLocked(g string) {
	for len(s.queue[g]) > 0 && s.running[g] < s.limitLocked(g) {
		f := s.queue[g][0]
		s.queue[g] = s.queue[g][1:]
		s.running[g]++
		s.wg.Go(func() {
			f()
			s.mu.Lock()
			s.running[g]--
			s.startLocked(g)
			s.mu.Unlock()
		})
	}
}

func (s *simExec) stats(g string) (running, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[g], s.limitLocked(g)
}

func (s *simExec) groups(yield func(string, load) bool) {
	s.mu.Lock()
	loads := map[string]load{}
	for g, r := range s.running {
		loads[g] = load{running: r, waiting: len(s.queue[g])}
	}
	s.mu.Unlock()
	for g, l := range loads {
		if !yield(g, l) {
			return
		}
	}
}

func (s *simExec) total() load {
	var t load
	for _, l := range s.groups {
		t.running, t.waiting = t.running+l.running, t.waiting+l.waiting
	}
	return t
}

func (s *simExec) apply(limits map[string]int, _ int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = limits
	for g := range s.queue {
		s.startLocked(g)
	}
	return nil
}
