package runner

import "testing"

func TestLineTail(t *testing.T) {
	l := NewLineTail(3)
	for _, s := range []string{"a\nb", "c\nd\ne\r\n", "f\ng\nh\ni", "j"} {
		_, _ = l.Write([]byte(s))
	}
	if got, want := l.Last(3), "f\ng\nh\nij"; got != want {
		t.Errorf("Last(3) = %q, want %q", got, want)
	}
	if got, want := l.Last(1), "h\nij"; got != want {
		t.Errorf("Last(1) = %q, want %q", got, want)
	}
	if got := NewLineTail(5).String(); got != "" {
		t.Errorf("empty tail = %q", got)
	}
}
