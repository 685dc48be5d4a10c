// Command excount reports, for each package directory it is given, how many
// of the package's exported functions and methods (of exported types) have
// an Example, as go/doc attaches them, and lists those without one.
//
//	go run ./internal/cmd/excount [-missing] [-need name,...] ./comm ./endpoint
//
// -need names functions (F) or methods (T.M) that must have an Example;
// excount exits 1 if one does not.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	missing := flag.Bool("missing", false, "list the functions and methods without an Example")
	need := flag.String("need", "", "comma-separated F or T.M that must have an Example")
	flag.Parse()
	want := map[string]bool{}
	for _, n := range strings.Split(*need, ",") {
		if n != "" {
			want[n] = false
		}
	}
	status := 0
	for _, dir := range flag.Args() {
		have, without, err := count(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "excount:", err)
			os.Exit(2)
		}
		total := len(have) + len(without)
		fmt.Printf("%s: %d of %d exported functions and methods have an Example (%.0f%%)\n",
			dir, len(have), total, 100*float64(len(have))/float64(max(total, 1)))
		for _, n := range have {
			if _, ok := want[n]; ok {
				want[n] = true
			}
		}
		if *missing {
			fmt.Printf("  without: %s\n", strings.Join(without, " "))
		}
	}
	var absent []string
	for n, ok := range want {
		if !ok {
			absent = append(absent, n)
		}
	}
	sort.Strings(absent)
	if len(absent) > 0 {
		fmt.Printf("needed, without an Example: %s\n", strings.Join(absent, " "))
		status = 1
	} else if len(want) > 0 {
		fmt.Printf("all %d needed functions and methods have an Example\n", len(want))
	}
	os.Exit(status)
}

// count returns the exported functions and methods of the package in dir
// with an Example and those without, as "F" or "T.M".
func count(dir string) (have, without []string, err error) {
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var files []*ast.File
	var name string
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		if n := f.Name.Name; !strings.HasSuffix(n, "_test") {
			name = n
		}
		files = append(files, f)
	}
	d, err := doc.NewFromFiles(fset, files, "example.com/"+name)
	if err != nil {
		return nil, nil, err
	}
	add := func(n string, ex []*doc.Example) {
		if len(ex) > 0 {
			have = append(have, n)
		} else {
			without = append(without, n)
		}
	}
	for _, f := range d.Funcs {
		add(f.Name, f.Examples)
	}
	for _, t := range d.Types {
		for _, f := range t.Funcs {
			add(f.Name, f.Examples)
		}
		for _, m := range t.Methods {
			add(t.Name+"."+m.Name, m.Examples)
		}
	}
	sort.Strings(have)
	sort.Strings(without)
	return have, without, nil
}
