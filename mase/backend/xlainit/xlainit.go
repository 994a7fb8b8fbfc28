// Package xlainit keeps go-xla's package initialisation quiet where $HOME
// is unset (a service, `env -i`, some containers).
//
// go-xla's pjrt package builds its list of PJRT plugin folders in an
// init(): it asks os.UserHomeDir for ~/.local/lib/go-xla and, where that
// fails, prints a klog error line ("Couldn't get user's home directory")
// before the program's first line of output, in every binary that links
// it, whatever the command. This package's init, which runs before
// go-xla's (packages are initialised in import-path order, each as soon as
// its imports are, and this one imports only standard packages and sorts
// before github.com/gomlx), sets HOME to a folder that does not exist when
// HOME is unset or empty; Restore, called from an init of a package that
// imports go-xla (mase/backend), unsets it again. The plugin search is
// unchanged: the folders under the missing home do not exist either way.
package xlainit

import "os"

// absentHome is the HOME go-xla's init sees where none is set: a path that
// does not exist and cannot be created by an ordinary user.
const absentHome = "/nonexistent/gomase-home-unset"

var (
	set     bool // whether init set HOME
	hadHome bool // whether HOME was in the environment (empty) before
)

func init() {
	var home string
	if home, hadHome = os.LookupEnv("HOME"); home == "" {
		set = os.Setenv("HOME", absentHome) == nil
	}
}

// Restore puts HOME back as it was before go-xla's initialisation. It is
// idempotent.
func Restore() {
	if set && os.Getenv("HOME") == absentHome {
		if hadHome {
			os.Setenv("HOME", "")
		} else {
			os.Unsetenv("HOME")
		}
	}
	set = false
}
