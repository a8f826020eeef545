// Package objectstoretest is the contract every engine.ObjectStore implementation must pass
// (the directory store now, S3 later): call Run from the implementation's tests.
package objectstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// LargeObjectSize is the size of the streamed object; MaxHeapGrowth is how much the heap may
// grow while it is put. An implementation holding the object whole needs more than the object.
const (
	LargeObjectSize = 50 << 20
	MaxHeapGrowth   = 40 << 20
)

var prefixSeq atomic.Int64

// Run runs the contract against the stores open returns. open is called once per subtest; it
// may return the same backing store (one bucket, one directory) every time, because each subtest
// works under a prefix of its own and only looks below it.
func Run(t *testing.T, open func(t *testing.T) engine.ObjectStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s engine.ObjectStore, prefix string)
	}{
		{"PutGetHead", testPutGetHead},
		{"EmptyObject", testEmptyObject},
		{"Missing", testMissing},
		{"Overwrite", testOverwrite},
		{"Delete", testDelete},
		{"ListPrefixes", testListPrefixes},
		{"DeepKey", testDeepKey},
		{"LargeStreamedPut", testLargeStreamedPut},
		{"CancelledPut", testCancelledPut},
		{"AlreadyCancelledPut", testAlreadyCancelledPut},
		{"FailedPut", testFailedPut},
		{"FailedOverwriteKeepsOld", testFailedOverwriteKeepsOld},
		{"ConcurrentPutDelete", testConcurrentPutDelete},
		{"BadKeys", testBadKeys},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			if s.Describe() == "" {
				t.Error("Describe() is empty")
			}
			prefix := fmt.Sprintf("contract-%d-%d/%s/", time.Now().UnixNano(), prefixSeq.Add(1), tc.name)
			tc.fn(t, s, prefix)
		})
	}
}

func put(t *testing.T, s engine.ObjectStore, key string, data []byte) engine.ObjectInfo {
	t.Helper()
	info, err := s.Put(context.Background(), key, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	if info.Key != key || info.Size != int64(len(data)) {
		t.Fatalf("Put(%q) = %+v, want key %q size %d", key, info, key, len(data))
	}
	return info
}

// Get reads the object key of s, failing the test when it cannot.
func Get(t *testing.T, s engine.ObjectStore, key string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", key, err)
	}
	return b
}

func wantNotFound(t *testing.T, s engine.ObjectStore, key string) {
	t.Helper()
	ctx := context.Background()
	if info, err := s.Head(ctx, key); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Head(%q) = %+v, %v; want ErrNotFound", key, info, err)
	}
	rc, err := s.Get(ctx, key)
	if err == nil {
		rc.Close()
	}
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Get(%q) error = %v; want ErrNotFound", key, err)
	}
}

func list(t *testing.T, s engine.ObjectStore, prefix string) []engine.ObjectInfo {
	t.Helper()
	infos, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return infos
}

func keys(infos []engine.ObjectInfo) []string {
	out := make([]string, 0, len(infos))
	for _, i := range infos {
		out = append(out, i.Key)
	}
	return out
}

func testPutGetHead(t *testing.T, s engine.ObjectStore, prefix string) {
	key := prefix + "a/obj.tar.zst"
	data := []byte("hello, archive")
	before := time.Now()
	put(t, s, key, data)
	if got := Get(t, s, key); !bytes.Equal(got, data) {
		t.Errorf("Get = %q, want %q", got, data)
	}
	info, err := s.Head(context.Background(), key)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if info.Key != key || info.Size != int64(len(data)) {
		t.Errorf("Head = %+v, want key %q size %d", info, key, len(data))
	}
	// Loose bounds: the store's clock (a server) may differ a little from ours.
	if d := info.ModTime.Sub(before); d < -time.Hour || d > time.Hour {
		t.Errorf("Head ModTime = %v, not near now (%v)", info.ModTime, before)
	}
}

func testEmptyObject(t *testing.T, s engine.ObjectStore, prefix string) {
	key := prefix + "empty"
	put(t, s, key, nil)
	if got := Get(t, s, key); len(got) != 0 {
		t.Errorf("Get = %q, want empty", got)
	}
	if infos := list(t, s, prefix); len(infos) != 1 || infos[0].Size != 0 {
		t.Errorf("List = %+v, want one empty object", infos)
	}
}

func testMissing(t *testing.T, s engine.ObjectStore, prefix string) {
	wantNotFound(t, s, prefix+"nothing")
	put(t, s, prefix+"dir/present", []byte("x"))
	wantNotFound(t, s, prefix+"dir/absent")
	wantNotFound(t, s, prefix+"dir/presen")
	if err := s.Delete(context.Background(), prefix+"dir/absent"); err != nil {
		t.Errorf("Delete of a missing object: %v", err)
	}
	if infos := list(t, s, prefix+"nowhere/"); len(infos) != 0 {
		t.Errorf("List of an unused prefix = %v, want nothing", keys(infos))
	}
}

func testOverwrite(t *testing.T, s engine.ObjectStore, prefix string) {
	key := prefix + "obj"
	put(t, s, key, []byte("first version, longer"))
	put(t, s, key, []byte("second"))
	if got := Get(t, s, key); string(got) != "second" {
		t.Errorf("Get after overwrite = %q", got)
	}
	info, err := s.Head(context.Background(), key)
	if err != nil || info.Size != 6 {
		t.Errorf("Head after overwrite = %+v, %v; want size 6", info, err)
	}
	if got := keys(list(t, s, prefix)); !slices.Equal(got, []string{key}) {
		t.Errorf("List after overwrite = %v", got)
	}
}

func testDelete(t *testing.T, s engine.ObjectStore, prefix string) {
	ctx := context.Background()
	a, b := prefix+"x/a", prefix+"x/b"
	put(t, s, a, []byte("a"))
	put(t, s, b, []byte("b"))
	if err := s.Delete(ctx, a); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantNotFound(t, s, a)
	if got := Get(t, s, b); string(got) != "b" {
		t.Errorf("sibling after Delete = %q", got)
	}
	if err := s.Delete(ctx, a); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if err := s.Delete(ctx, b); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if infos := list(t, s, prefix); len(infos) != 0 {
		t.Errorf("List after deleting everything = %v", keys(infos))
	}
	// A key whose prefix once held objects can be used again.
	put(t, s, a, []byte("again"))
	if got := Get(t, s, a); string(got) != "again" {
		t.Errorf("Get after re-put = %q", got)
	}
}

func testListPrefixes(t *testing.T, s engine.ObjectStore, prefix string) {
	all := []string{"a/1", "a/2", "a/b/3", "ab/4", "a.b/5", "b/6", "a-z"}
	sizes := map[string]int64{}
	for i, k := range all {
		data := bytes.Repeat([]byte{'x'}, i+1)
		put(t, s, prefix+k, data)
		sizes[prefix+k] = int64(len(data))
	}
	sorted := func(ks ...string) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = prefix + k
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", sorted(all...)},
		{"a", sorted("a/1", "a/2", "a/b/3", "ab/4", "a.b/5", "a-z")},
		{"a/", sorted("a/1", "a/2", "a/b/3")},
		{"a/b", sorted("a/b/3")},
		{"a/b/", sorted("a/b/3")},
		{"a/1", sorted("a/1")},
		{"ab", sorted("ab/4")},
		{"b/6", sorted("b/6")},
		{"c", sorted()},
		{"a/b/3/", sorted()},
	}
	for _, c := range cases {
		infos := list(t, s, prefix+c.prefix)
		if got := keys(infos); !slices.Equal(got, c.want) {
			t.Errorf("List(%q) = %v, want %v", prefix+c.prefix, got, c.want)
			continue
		}
		for _, i := range infos {
			if i.Size != sizes[i.Key] {
				t.Errorf("List(%q): %s has size %d, want %d", prefix+c.prefix, i.Key, i.Size, sizes[i.Key])
			}
		}
	}
}

func testDeepKey(t *testing.T, s engine.ObjectStore, prefix string) {
	key := prefix + "projects/owner@example.com/0f4e-1234/snap-01.tar.zst"
	put(t, s, key, []byte("deep"))
	if got := Get(t, s, key); string(got) != "deep" {
		t.Errorf("Get = %q", got)
	}
	if got := keys(list(t, s, prefix+"projects/owner@example.com/")); !slices.Equal(got, []string{key}) {
		t.Errorf("List = %v", got)
	}
}

// newGenReader is a generated object of size bytes, always the same ones.
func newGenReader(size int64) *archivetest.Gen {
	return archivetest.NewGen([32]byte{1, 2, 3}, size)
}

func testLargeStreamedPut(t *testing.T, s engine.ObjectStore, prefix string) {
	key := prefix + "large.bin"
	gen := newGenReader(LargeObjectSize)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stop := archivetest.Peak(5*time.Millisecond, 1, func(v []uint64) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		v[0] = ms.HeapInuse
	})
	info, err := s.Put(context.Background(), key, gen)
	peak := stop()[0]
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if info.Size != LargeObjectSize {
		t.Errorf("Put size = %d, want %d", info.Size, LargeObjectSize)
	}
	if growth := int64(peak) - int64(base); growth > MaxHeapGrowth {
		t.Errorf("heap grew by %d MiB during a %d MiB Put (limit %d MiB): the object is held in memory",
			growth>>20, LargeObjectSize>>20, MaxHeapGrowth>>20)
	}
	ReadBack(t, s, key, gen)
}

// ReadBack reads the object at key whole and checks it is what gen generated, every byte of it.
func ReadBack(t *testing.T, s engine.ObjectStore, key string, gen *archivetest.Gen) {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	defer rc.Close()
	n, sum, err := archivetest.HashAll(rc)
	if err != nil {
		t.Fatalf("Get: read: %v", err)
	}
	if !gen.Matches(n, sum) {
		t.Errorf("Get returned %d bytes that differ from what was put", n)
	}
}

func wantNoObject(t *testing.T, s engine.ObjectStore, prefix, key string) {
	t.Helper()
	wantNotFound(t, s, key)
	if infos := list(t, s, prefix); len(infos) != 0 {
		t.Errorf("List(%q) after a failed Put = %v, want nothing (temporary files must not be listed)", prefix, keys(infos))
	}
}

func testCancelledPut(t *testing.T, s engine.ObjectStore, prefix string) {
	key := prefix + "cancelled"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The reader goes on to a clean EOF after the cancellation, so only a store that watches
	// the context notices it.
	gen := newGenReader(8 << 20)
	gen.AfterRead = func(n int64) {
		if n >= 1<<20 {
			cancel()
		}
	}
	if info, err := s.Put(ctx, key, gen); err == nil {
		t.Fatalf("Put with a context cancelled mid-way succeeded: %+v", info)
	}
	wantNoObject(t, s, prefix, key)
}

func testAlreadyCancelledPut(t *testing.T, s engine.ObjectStore, prefix string) {
	key := prefix + "cancelled"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if info, err := s.Put(ctx, key, strings.NewReader("data")); err == nil {
		t.Fatalf("Put with a cancelled context succeeded: %+v", info)
	}
	wantNoObject(t, s, prefix, key)
}

func testFailedPut(t *testing.T, s engine.ObjectStore, prefix string) {
	key := prefix + "failed"
	gen := newGenReader(8 << 20)
	gen.FailAt = 1 << 20
	info, err := s.Put(context.Background(), key, gen)
	if err == nil {
		t.Fatalf("Put from a failing reader succeeded: %+v", info)
	}
	if !errors.Is(err, archivetest.ErrInjected) {
		t.Logf("note: Put error does not wrap the reader's error: %v", err)
	}
	wantNoObject(t, s, prefix, key)
}

func testFailedOverwriteKeepsOld(t *testing.T, s engine.ObjectStore, prefix string) {
	key := prefix + "obj"
	put(t, s, key, []byte("old contents"))
	gen := newGenReader(4 << 20)
	gen.FailAt = 1 << 20
	if _, err := s.Put(context.Background(), key, gen); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if got := Get(t, s, key); string(got) != "old contents" {
		t.Errorf("after a failed overwrite Get = %d bytes, want the old object", len(got))
	}
	if got := keys(list(t, s, prefix)); !slices.Equal(got, []string{key}) {
		t.Errorf("List after a failed overwrite = %v", got)
	}
}

// testConcurrentPutDelete puts and deletes neighbours at once: a store that prunes empty
// "directories" on Delete must not break a Put landing in the same one.
func testConcurrentPutDelete(t *testing.T, s engine.ObjectStore, prefix string) {
	ctx := context.Background()
	const workers, rounds = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				key := fmt.Sprintf("%sshared/w%d-r%d", prefix, w, r)
				if _, err := s.Put(ctx, key, strings.NewReader(key)); err != nil {
					errs <- err
					continue
				}
				if err := s.Delete(ctx, key); err != nil {
					errs <- err
				}
			}
			if _, err := s.Put(ctx, fmt.Sprintf("%sshared/w%d-final", prefix, w), strings.NewReader("final")); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := list(t, s, prefix+"shared/"); len(got) != workers {
		t.Errorf("List after concurrent puts and deletes = %v, want %d final objects", keys(got), workers)
	}
}

// testBadKeys pins the one key rule (engine.CheckKey) on every store: a key that could mean
// something else somewhere is refused with ErrBadPath by every operation, and nothing is stored.
func testBadKeys(t *testing.T, s engine.ObjectStore, prefix string) {
	ctx := context.Background()
	for _, bad := range []string{prefix + "a//b", prefix + "a/./b", prefix + "a/../b", prefix + "a/", "/" + prefix + "a",
		prefix + "a\x00b", prefix + `a\b`, prefix + "a\xffb", prefix + "..", ""} {
		if _, err := s.Put(ctx, bad, bytes.NewReader([]byte("x"))); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Put(%q) = %v, want ErrBadPath", bad, err)
		}
		if _, err := s.Head(ctx, bad); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Head(%q) = %v, want ErrBadPath", bad, err)
		}
		if rc, err := s.Get(ctx, bad); !errors.Is(err, engine.ErrBadPath) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("Get(%q) = %v, want ErrBadPath", bad, err)
		}
		if err := s.Delete(ctx, bad); !errors.Is(err, engine.ErrBadPath) {
			t.Errorf("Delete(%q) = %v, want ErrBadPath", bad, err)
		}
	}
	if infos := list(t, s, prefix); len(infos) != 0 {
		t.Errorf("refused keys left objects: %+v", infos)
	}
}
