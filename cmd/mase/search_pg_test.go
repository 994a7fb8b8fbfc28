//go:build unix

package main

import (
	"testing"

	"github.com/gomase/gomase/internal/pgtest"
)

// A mase search on a PostgreSQL database of a private server (internal/pgtest).
func init() {
	searchStorages = append(searchStorages, struct {
		name string
		spec func(t *testing.T) string
	}{"postgres", func(t *testing.T) string { return pgtest.New(t).Database(t) }})
}
