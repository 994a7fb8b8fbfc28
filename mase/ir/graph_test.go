package ir

import (
	"errors"
	"strings"
	"testing"
)

// chain builds x → relu → add(relu, x) → output.
func chain(t *testing.T) (*Graph, *Node, *Node, *Node, *Node) {
	t.Helper()
	g := New()
	x := g.MustAddNode(Placeholder, "x", "x", nil, nil)
	r := g.MustAddNode(CallFunction, "", "relu", []any{x}, nil)
	a := g.MustAddNode(CallFunction, "", "add", []any{r, x}, nil)
	o := g.MustAddNode(Output, "output", "output", []any{a}, nil)
	if err := g.Lint(); err != nil {
		t.Fatal(err)
	}
	return g, x, r, a, o
}

func names(ns []*Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, ",")
}

func TestAddNodeNamesAndUsers(t *testing.T) {
	g, x, r, a, _ := chain(t)
	if got := names(x.Users()); got != "relu,add" {
		t.Errorf("users of x = %s, want relu,add", got)
	}
	a2 := g.MustAddNode(CallFunction, "", "add", []any{a, a}, nil)
	if a2.Name != "add_1" {
		t.Errorf("second add named %s, want add_1", a2.Name)
	}
	if a.NumUsers() != 2 { // output and add_1 (listed once even if used twice)
		t.Errorf("add has %d users, want 2", a.NumUsers())
	}
	m := g.MustAddNode(CallModule, "", "bert.embeddings.dropout", []any{r}, nil)
	if m.Name != "bert_embeddings_dropout" {
		t.Errorf("module node named %s", m.Name)
	}
	if _, err := g.AddNode("call_thing", "", "x", nil, nil); err == nil || !strings.Contains(err.Error(), "allowed") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := g.AddNode(Output, "", "output", nil, nil); err == nil {
		t.Error("second output accepted")
	}
	other := New()
	if _, err := other.AddNode(CallFunction, "", "relu", []any{x}, nil); err == nil {
		t.Error("node from another graph accepted as argument")
	}
	if g.Node("relu") != r || g.Node("nope") != nil {
		t.Error("Node lookup")
	}
}

func TestReplaceAllUsesWith(t *testing.T) {
	g, x, r, a, _ := chain(t)
	changed, err := r.ReplaceAllUsesWith(x)
	if err != nil {
		t.Fatal(err)
	}
	if names(changed) != "add" {
		t.Errorf("changed %s", names(changed))
	}
	if r.NumUsers() != 0 {
		t.Errorf("relu still has users %s", names(r.Users()))
	}
	if a.Arg(0) != x || a.Arg(1) != x {
		t.Errorf("add args = %v", a.Args())
	}
	if err := g.Lint(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReplaceAllUsesWith(nil); err == nil {
		t.Error("replacement by nil accepted")
	}
}

func TestEraseNode(t *testing.T) {
	g, x, r, _, _ := chain(t)
	err := g.EraseNode(x)
	var ee *EraseError
	if !errors.As(err, &ee) {
		t.Fatalf("erasing a used node: got %v", err)
	}
	want := "cannot erase node x: it still has 2 users: relu, add"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %q, want prefix %q", err, want)
	}
	if g.Len() != 4 {
		t.Error("failed erase changed the graph")
	}
	// Rewire then erase works and keeps the graph consistent.
	if _, err := r.ReplaceAllUsesWith(x); err != nil {
		t.Fatal(err)
	}
	if err := g.EraseNode(r); err != nil {
		t.Fatal(err)
	}
	if g.Node("relu") != nil || g.Len() != 3 {
		t.Error("relu still present")
	}
	if got := names(x.Users()); got != "add" {
		t.Errorf("users of x after erase: %s", got)
	}
	if err := g.Lint(); err != nil {
		t.Fatal(err)
	}
	if err := g.EraseNode(r); err == nil {
		t.Error("erasing twice accepted")
	}
	// The freed name is reusable.
	if n := g.MustAddNode(CallFunction, "", "relu", []any{x}, nil); n.Name != "relu" {
		t.Errorf("reused name = %s", n.Name)
	}
}

func TestInserting(t *testing.T) {
	g, x, r, a, o := chain(t)
	var n1, n2 *Node
	err := g.InsertingBefore(a, func() error {
		n1 = g.MustAddNode(CallFunction, "", "neg", []any{r}, nil)
		n2 = g.MustAddNode(CallFunction, "", "neg", []any{n1}, nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetArgs(n2, x); err != nil {
		t.Fatal(err)
	}
	if got := names(g.Nodes()); got != "x,relu,neg,neg_1,add,output" {
		t.Errorf("order after InsertingBefore: %s", got)
	}
	if err := g.InsertingAfter(x, func() error {
		g.MustAddNode(CallMethod, "", "size", []any{x}, nil)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := names(g.Nodes()); got != "x,size,relu,neg,neg_1,add,output" {
		t.Errorf("order after InsertingAfter: %s", got)
	}
	if err := g.Lint(); err != nil {
		t.Fatal(err)
	}
	// New nodes go to the end again afterwards.
	g2 := g.MustAddNode(CallFunction, "", "relu", []any{x}, nil)
	if g.Nodes()[g.Len()-1] != g2 {
		t.Error("insertion point not restored")
	}
	if err := g.InsertingBefore(&Node{Name: "ghost"}, func() error { return nil }); err == nil {
		t.Error("inserting before a foreign node accepted")
	}
	_ = o
}

func TestLintCatchesBrokenGraphs(t *testing.T) {
	// A use before definition (a pass that moved nodes wrongly).
	g, x, r, a, _ := chain(t)
	g.nodes[1], g.nodes[2] = g.nodes[2], g.nodes[1]
	if err := g.Lint(); err == nil || !strings.Contains(err.Error(), "before it is defined") {
		t.Errorf("use-before-def not caught: %v", err)
	}
	g.nodes[1], g.nodes[2] = g.nodes[2], g.nodes[1]
	// Inconsistent users.
	x.users = append(x.users, a)
	x.users = x.users[:1]
	if err := g.Lint(); err == nil || !strings.Contains(err.Error(), "missing from its users") {
		t.Errorf("users inconsistency not caught: %v", err)
	}
	// No output.
	g3 := New()
	g3.MustAddNode(Placeholder, "x", "x", nil, nil)
	if err := g3.Lint(); err == nil || !strings.Contains(err.Error(), "0 output") {
		t.Errorf("missing output not caught: %v", err)
	}
	_ = r
}

func TestStringAndFormat(t *testing.T) {
	g, _, _, _, _ := chain(t)
	s := g.String()
	for _, want := range []string{
		"%x : [num_users=2] = placeholder[target=x]",
		"%add : [num_users=1] = call_function[target=add](args = (%relu, %x), kwargs = {})",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("graph listing lacks %q:\n%s", want, s)
		}
	}
	one := 1
	if got := FormatValue([]any{Slice{}, 0, Slice{Start: &one}, 1.0, nil, true}); got != "(slice(:), 0, slice(1:), 1.0, None, True)" {
		t.Errorf("FormatValue = %s", got)
	}
}

func TestArgMapJSONRoundTrip(t *testing.T) {
	m := &ArgMap{}
	m.Set("data_in_0", &ArgInfo{Type: "float", Precision: []int{32}, Shape: []int{2, 10}})
	m.Set("weight", &ArgInfo{Type: "float", Precision: []int{32}, Shape: []int{4, 2}, IsParam: true})
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"data_in_0":`) {
		t.Errorf("order lost: %s", b)
	}
	var back ArgMap
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if strings.Join(back.Keys(), ",") != "data_in_0,weight" || back.Get("weight").Shape[0] != 4 {
		t.Errorf("round trip: %v", back.Keys())
	}
	back.Delete("data_in_0")
	if back.Len() != 1 || back.Get("data_in_0") != nil {
		t.Error("Delete")
	}
}
