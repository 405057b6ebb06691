package groupstate

// Priorities order the waiters of a line. A waiter never stands behind one
// of a lower priority. Waiters of one priority stand in the order they
// joined. 0 is the highest. PriorityDefault is what every task has unless
// its submitter says otherwise.
const (
	NumPriorities   = 5
	PriorityDefault = 2
)
