package storages

import (
	"context"
	"time"
)

// beatLoop calls a storage's heartbeat every interval in a goroutine of its
// own until stopped; the storages keep one while a heartbeat is on.
type beatLoop struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
}

// startBeatLoop calls beat every interval (with a context that stop
// cancels) and failed with each error of a beat not cut short by stop.
func startBeatLoop(interval time.Duration, beat func(context.Context) error, failed func(error)) *beatLoop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &beatLoop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := beat(ctx); err != nil && ctx.Err() == nil {
				failed(err)
			}
		}
	}()
	return l
}

// stop ends the loop and waits for its goroutine; a nil loop is none.
func (l *beatLoop) stop() {
	if l != nil {
		l.cancel()
		<-l.done
	}
}
