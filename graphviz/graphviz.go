// Package graphviz writes Graphviz DOT and renders it to SVG in-process.
//
// Rendering uses github.com/goccy/go-graphviz, which runs Graphviz compiled
// to WebAssembly under wazero: no `dot` binary and no cgo are needed, so
// drawings work on a fresh machine and inside notebooks. (go-graphviz
// v0.2.1's own wazero crashes under Go 1.26; go.mod pins wazero v1.11.0,
// which fixes it.)
//
// go-graphviz compiles its WebAssembly when a binary starts, in its package
// initialisation, and keeps the compiled code in a cache. Left alone it would
// use $TMPDIR/go-graphviz, shared by every user of the machine (a second
// user's program panics on the first one's files) and leave a $TMPDIR/graphvizNNN
// folder behind; here (graphviz/internal/initdir) the cache is the user's
// own, os.UserCacheDir()/gomase/graphviz (~/.cache/gomase/graphviz on Linux,
// see CacheDir), and nothing is left in $TMPDIR. Removing that folder clears
// the cache; the next program compiles again (about a second). Each start-up
// checks the cache against the manifest the last good start-up wrote beside
// it and empties a damaged one (a file cut short, a FIFO) before go-graphviz
// reads it, which would otherwise panic in every program. A user without a
// usable cache folder (no home, a full disk, another user's folder) gets a
// private temporary one, removed at start-up, in $TMPDIR or, where that is
// unusable, /tmp, /var/tmp or /dev/shm.
package graphviz

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	gv "github.com/goccy/go-graphviz"

	"github.com/gomase/gomase/graphviz/internal/initdir"
)

// go-graphviz's initialisation has run (its package is imported here): put
// TMPDIR back and remove the folder it used.
func init() { _ = initdir.Restore() }

// CacheDir returns the folder that keeps go-graphviz's compiled WebAssembly
// for this user, os.UserCacheDir()/gomase/graphviz/wazero ("" when this
// process keeps none); removing it clears the cache.
func CacheDir() string { return initdir.CacheDir() }

// Digraph is a directed graph being described in DOT.
type Digraph struct {
	// Name is the graph's name in the DOT source.
	Name string
	// Attrs are graph attributes (rankdir, ...).
	Attrs map[string]string
	// NodeAttrs are defaults for every node (shape, fontname, ...).
	NodeAttrs map[string]string
	// EdgeAttrs are defaults for every edge.
	EdgeAttrs map[string]string

	nodes []dotNode
	edges []dotEdge
	ids   map[string]bool
}

type dotNode struct {
	id    string
	attrs map[string]string
}

type dotEdge struct {
	from, to string
	attrs    map[string]string
}

// NewDigraph returns an empty directed graph.
func NewDigraph(name string) *Digraph {
	return &Digraph{Name: name, Attrs: map[string]string{}, NodeAttrs: map[string]string{}, EdgeAttrs: map[string]string{}, ids: map[string]bool{}}
}

// AddNode adds a node; adding the same id twice is an error.
func (d *Digraph) AddNode(id string, attrs map[string]string) error {
	if d.ids[id] {
		return fmt.Errorf("graphviz: node %q added twice", id)
	}
	d.ids[id] = true
	d.nodes = append(d.nodes, dotNode{id, attrs})
	return nil
}

// AddEdge adds an edge between two nodes already added.
func (d *Digraph) AddEdge(from, to string, attrs map[string]string) error {
	for _, id := range []string{from, to} {
		if !d.ids[id] {
			return fmt.Errorf("graphviz: edge %s -> %s names unknown node %q", from, to, id)
		}
	}
	d.edges = append(d.edges, dotEdge{from, to, attrs})
	return nil
}

// NumNodes returns how many nodes were added.
func (d *Digraph) NumNodes() int { return len(d.nodes) }

// Quote returns s as a DOT double-quoted string.
func Quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func writeAttrs(b *strings.Builder, attrs map[string]string) {
	if len(attrs) == 0 {
		return
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString(" [")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		v := attrs[k]
		if k == "label" && strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">") {
			b.WriteString(k + "=" + v) // HTML-like label, written as is
		} else {
			b.WriteString(k + "=" + Quote(v))
		}
	}
	b.WriteString("]")
}

// String returns the DOT source.
func (d *Digraph) String() string {
	var b strings.Builder
	b.WriteString("digraph " + Quote(d.Name) + " {\n")
	for _, kind := range []struct {
		word  string
		attrs map[string]string
	}{{"graph", d.Attrs}, {"node", d.NodeAttrs}, {"edge", d.EdgeAttrs}} {
		if len(kind.attrs) > 0 {
			b.WriteString("  " + kind.word)
			writeAttrs(&b, kind.attrs)
			b.WriteString(";\n")
		}
	}
	for _, n := range d.nodes {
		b.WriteString("  " + Quote(n.id))
		writeAttrs(&b, n.attrs)
		b.WriteString(";\n")
	}
	for _, e := range d.edges {
		b.WriteString("  " + Quote(e.from) + " -> " + Quote(e.to))
		writeAttrs(&b, e.attrs)
		b.WriteString(";\n")
	}
	b.WriteString("}\n")
	return b.String()
}

var (
	renderMu sync.Mutex
	renderer *gv.Graphviz
)

// RenderSVG lays out DOT source with Graphviz's dot layout and returns SVG.
// Calls are serialised: one WebAssembly Graphviz instance serves the process.
func RenderSVG(dot string) ([]byte, error) {
	renderMu.Lock()
	defer renderMu.Unlock()
	ctx := context.Background()
	if renderer == nil {
		r, err := gv.New(ctx)
		if err != nil {
			if setup := initdir.Err(); setup != nil {
				err = fmt.Errorf("%w (its folders: %v)", err, setup)
			}
			return nil, fmt.Errorf("graphviz: starting the WebAssembly Graphviz: %w", err)
		}
		renderer = r
	}
	g, err := gv.ParseBytes([]byte(dot))
	if err != nil {
		return nil, fmt.Errorf("graphviz: parsing DOT: %w", err)
	}
	defer g.Close()
	var buf bytes.Buffer
	if err := renderer.Render(ctx, g, gv.SVG, &buf); err != nil {
		return nil, fmt.Errorf("graphviz: rendering SVG: %w", err)
	}
	return buf.Bytes(), nil
}
