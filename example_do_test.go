package groupconc_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kobe/groupconc"
)

// Do limits work that already runs on a goroutine of its own, such as an
// HTTP handler: at most two calls per tenant run at once, and a tenant's
// third call waits in its line.
func ExampleDo() {
	e := groupconc.New(exMustBuild(groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(0)))
	defer e.Close()

	render := func(ctx context.Context) (string, error) { return "page", nil }
	page, err := groupconc.Do(context.Background(), e, "acme", render, groupconc.SubmitOptions{})
	fmt.Println(page, err)

	// With the group full and no room to wait, Do is turned away.
	hold := make(chan struct{})
	started := make(chan struct{}, 2)
	for range 2 {
		go groupconc.Do(context.Background(), e, "acme", func(context.Context) (string, error) {
			started <- struct{}{}
			<-hold
			return "", nil
		}, groupconc.SubmitOptions{})
	}
	<-started
	<-started
	_, err = groupconc.Do(context.Background(), e, "acme", render, groupconc.SubmitOptions{})
	var re *groupconc.RejectedError
	fmt.Println(errors.As(err, &re), re.Reason)
	close(hold)
	// Output:
	// page <nil>
	// true group_queue_full
}
