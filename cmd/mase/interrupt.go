package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/gomase/gomase/mase/download"
)

// signalGrace is how long a command has, after SIGINT or SIGTERM, to
// return on its own (a cancelled download returns at once) before the
// signal's default action ends the process (a variable for the tests).
var signalGrace = 2 * time.Second

// interruptible returns a context that SIGINT and SIGTERM cancel, for the
// downloads a command starts: they stop and remove their temporary files.
// The signal is not swallowed: if the command has not returned signalGrace
// after it (it was training, which does not watch the context), or when a
// second signal comes, the default handling is restored and the signal
// sent again, so the process ends as it would have without the handler.
// release (idempotent) ends the handling; call it once the downloads are
// done, and defer it.
func interruptible() (ctx context.Context, release func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var once sync.Once
	release = func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
		})
	}
	go func() {
		var sig os.Signal
		select {
		case <-done:
			return
		case sig = <-sigs:
		}
		cancel(fmt.Errorf("%s received", signalName(sig)))
		select {
		case <-done:
			return
		case <-sigs:
		case <-time.After(signalGrace):
		}
		release()
		download.RemoveTemporaries() // the downloads' own clean-up will not run
		resend(sig)
	}()
	return ctx, release
}

// signalName is SIGINT or SIGTERM.
func signalName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// resend delivers sig to this process again with its default action (the
// handler is gone); where that is impossible it exits as a shell would
// report the signal. The tests replace it.
var resend = func(sig os.Signal) {
	p, err := os.FindProcess(os.Getpid())
	if err == nil {
		err = p.Signal(sig)
	}
	if err != nil {
		code := 130
		if sig == syscall.SIGTERM {
			code = 143
		}
		os.Exit(code)
	}
}
