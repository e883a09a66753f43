// Command slowtests lists the tests that make test leaves out: those that call
// internal/testkit/slow's Need, directly or through a helper of their own package (needGuest,
// startFarm, ...). make test-slow runs exactly them, so that a new slow test is run there as
// soon as it calls slow.Need, without a list to keep.
//
//	go run ./tools/slowtests            # one line per package: its directory and a -run pattern
//	go run ./tools/slowtests -packages  # the packages' directories only
//	go run ./tools/slowtests -run       # one -run pattern for all of them
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/fsbench/fsbench/tools/internal/slowtests"
)

func main() {
	pkgs := flag.Bool("packages", false, "print the directories of the packages that have slow tests")
	run := flag.Bool("run", false, "print one go test -run pattern matching every slow test")
	root := flag.String("root", ".", "the module's root directory")
	flag.Parse()
	found, err := slowtests.Find(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowtests:", err)
		os.Exit(1)
	}
	if len(found) == 0 {
		fmt.Fprintln(os.Stderr, "slowtests: no test calls slow.Need")
		os.Exit(1)
	}
	switch {
	case *pkgs:
		for _, p := range found {
			fmt.Println(p.Dir)
		}
	case *run:
		fmt.Println(slowtests.Pattern(found))
	default:
		for _, p := range found {
			fmt.Printf("%s %s\n", p.Dir, slowtests.Pattern([]slowtests.Package{p}))
		}
	}
}
