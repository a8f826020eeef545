package offheap

import "testing"

func TestBuffer(t *testing.T) {
	before := InUse()
	b := New(3 << 20)
	got := b.Bytes()
	if len(got) != 3<<20 {
		t.Fatalf("len = %d", len(got))
	}
	for i := range got {
		if got[i] != 0 {
			t.Fatalf("byte %d = %d, want zero", i, got[i])
		}
	}
	for i := range got {
		got[i] = byte(i)
	}
	if InUse()-before != 3<<20 {
		t.Errorf("InUse grew by %d", InUse()-before)
	}
	b.Free()
	b.Free()
	if b.Bytes() != nil {
		t.Error("Bytes after Free is not nil")
	}
	if InUse() != before {
		t.Errorf("InUse = %d after Free, want %d", InUse(), before)
	}
	var nilBuf *Buffer
	nilBuf.Free()
	if e := New(0); len(e.Bytes()) != 0 {
		t.Error("New(0) is not empty")
	}
}
