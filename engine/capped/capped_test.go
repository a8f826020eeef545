package capped

import (
	"fmt"
	"testing"
)

func TestBuffer(t *testing.T) {
	b := &Buffer{Max: 5}
	for _, w := range []string{"ab", "cd", "efg", "h"} {
		if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if b.String() != "abcde" || string(b.Bytes()) != "abcde" || !b.Truncated {
		t.Errorf("got %q, truncated %v", b.String(), b.Truncated)
	}
	fit := &Buffer{Max: 4}
	fmt.Fprint(fit, "abcd")
	if fit.String() != "abcd" || fit.Truncated {
		t.Errorf("exact fit: %q, truncated %v", fit.String(), fit.Truncated)
	}
}
