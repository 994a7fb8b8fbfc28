package download

import (
	"errors"
	"os"
	"strings"
)

// ErrOffline is wrapped by the error of a download refused because
// offline mode is on (OfflineWhy).
var ErrOffline = errors.New("download: offline")

// OfflineVars are the environment variables that turn offline mode on when
// set to 1, true, yes or on: gomase's own and Hugging Face's.
var OfflineVars = []string{"GOMASE_OFFLINE", "HF_HUB_OFFLINE"}

// OfflineWhy names the setting that forbids network access ("GOMASE_OFFLINE"),
// or is "" when downloads are allowed. Every download of gomase (Get, and the
// hub client) asks it before it makes a request, so that offline mode makes
// no network access at all, not even a DNS query.
func OfflineWhy() string {
	for _, v := range OfflineVars {
		if Truthy(os.Getenv(v)) {
			return v
		}
	}
	return ""
}

// Truthy reports whether an environment setting means yes: 1, true, yes
// or on, in any case.
func Truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
