// Command searchbench runs mase/search's samplers on the objectives of the
// Optuna peer benchmark (shared/bench/optuna_peer.py) and prints the report
// in the peer's JSON shape.
//
//	go run ./cmd/searchbench [-samplers tpe,random] [-per-seed] [trials [seeds]]   # default 100 20, like the peer
//
// Samplers: tpe, random, tpe-normalized (TPE scoring with Optuna ≥ 3.5's normalised densities).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gomase/gomase/mase/search/searchbench"
)

func main() {
	samplers := flag.String("samplers", strings.Join(searchbench.Samplers, ","), "comma-separated samplers: tpe, random, tpe-normalized")
	perSeed := flag.Bool("per-seed", false, "print each seed's final best value instead of the medians")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: searchbench [-samplers list] [-per-seed] [trials [seeds]]")
		flag.PrintDefaults()
	}
	flag.Parse()
	trials, seeds := 100, 20
	args := flag.Args()
	if len(args) > 2 {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if len(args) > 0 {
		if trials, err = strconv.Atoi(args[0]); err != nil {
			fail(fmt.Errorf("trials %q is not an integer", args[0]))
		}
	}
	if len(args) > 1 {
		if seeds, err = strconv.Atoi(args[1]); err != nil {
			fail(fmt.Errorf("seeds %q is not an integer", args[1]))
		}
	}
	var res any
	if *perSeed {
		res, err = searchbench.PerSeed(trials, seeds, strings.Split(*samplers, ","))
	} else {
		res, err = searchbench.Run(trials, seeds, strings.Split(*samplers, ","))
	}
	if err != nil {
		fail(err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(res); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "searchbench:", err)
	os.Exit(2)
}
