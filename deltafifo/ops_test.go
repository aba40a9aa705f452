package deltafifo

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"k8s.io/client-go/tools/cache"
)

// opKind is one thing a differential test does to both queues.
type opKind int

const (
	opAdd opKind = iota
	opUpdate
	opDelete
	opReplace
	opResync
	opBookmark
	opPop
	opPopBatch
	opPhantom // make a key a phantom in KnownObjects
	opClose
	opBreak // break a queued brokenObj's key
)

var opNames = map[opKind]string{
	opAdd: "Add", opUpdate: "Update", opDelete: "Delete", opReplace: "Replace",
	opResync: "Resync", opBookmark: "Bookmark", opPop: "Pop", opPopBatch: "PopBatch",
	opPhantom: "Phantom", opClose: "Close", opBreak: "Break",
}

// op is one step of a differential test, with all its arguments drawn in
// advance so both queues get the same.
type op struct {
	kind   opKind
	obj    interface{}   // Add, Update, Delete
	list   []interface{} // Replace
	rv     string        // Replace, Bookmark
	fail   bool          // Pop, PopBatch: the consumer returns errProcess
	key    string        // Phantom
	err    error         // Phantom: what GetByKey returns (nil: !exists)
	broken *brokenObj    // Break
}

func (o op) String() string {
	var b strings.Builder
	b.WriteString(opNames[o.kind])
	switch o.kind {
	case opAdd, opUpdate, opDelete:
		fmt.Fprintf(&b, "(%+v)", o.obj)
	case opReplace:
		fmt.Fprintf(&b, "(%+v, %q)", o.list, o.rv)
	case opBookmark:
		fmt.Fprintf(&b, "(%q)", o.rv)
	case opPop, opPopBatch:
		if o.fail {
			b.WriteString("(failing)")
		}
	case opPhantom:
		fmt.Fprintf(&b, "(%q, %v)", o.key, o.err)
	case opBreak:
		fmt.Fprintf(&b, "(%q)", o.broken.key)
	}
	return b.String()
}

// genConfig shapes a random operation sequence.
type genConfig struct {
	ops           int  // length of the sequence
	keys          int  // size of the key space; small, so keys collide
	transformErrs bool // draw objects the transformer refuses
	batches       bool // draw PopBatch as well as Pop
	bookmarks     bool // draw Bookmark
}

// opGen draws operations from a seeded source.
type opGen struct {
	rng *rand.Rand
	cfg genConfig
	val int
}

func newOpGen(seed uint64, cfg genConfig) *opGen {
	return &opGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), cfg: cfg}
}

// obj draws an object: usually a fresh version of a random key, rarely one
// without a key or one the transformer refuses.
func (g *opGen) obj() testObj {
	g.val++
	o := testObj{Key: fmt.Sprintf("ns/k%02d", g.rng.IntN(g.cfg.keys)), Val: g.val}
	switch n := g.rng.IntN(100); {
	case n == 0:
		o.Key = ""
	case n <= 2 && g.cfg.transformErrs:
		o.Val = -1
	}
	return o
}

// list draws a list for Replace: a random subset of the keys in random order,
// sometimes with a key twice or an object without a key.
func (g *opGen) list() []interface{} {
	perm := g.rng.Perm(g.cfg.keys)[:g.rng.IntN(g.cfg.keys+1)]
	list := make([]interface{}, 0, len(perm)+1)
	for _, k := range perm {
		g.val++
		list = append(list, testObj{Key: fmt.Sprintf("ns/k%02d", k), Val: g.val})
	}
	switch n := g.rng.IntN(100); {
	case n < 5 && len(list) > 0:
		list = append(list, list[g.rng.IntN(len(list))])
	case n < 7:
		list = append(list, testObj{Val: -2})
	case n < 9 && g.cfg.transformErrs && len(list) > 0:
		list[g.rng.IntN(len(list))] = testObj{Key: "ns/k00", Val: -1}
	}
	return list
}

// sequence draws a whole run. Two runs in three start list-first: a few
// operations that are not events (Resync, Bookmark, Pop...), then a Replace,
// so HasSynced waits for that list to be popped while events arrive. The
// others may start with anything. A third of the runs close the queue
// somewhere in their second half and go on.
func (g *opGen) sequence() []op {
	closeAt := -1
	if g.rng.IntN(3) == 0 {
		closeAt = g.cfg.ops/2 + g.rng.IntN(g.cfg.ops/2)
	}
	var ops []op
	if g.rng.IntN(3) > 0 {
		for n := g.rng.IntN(4); n > 0; n-- {
			ops = append(ops, g.next(true)...)
		}
		ops = append(ops, op{kind: opReplace, list: g.list(), rv: fmt.Sprint(g.rng.IntN(1000))})
	}
	for len(ops) < g.cfg.ops {
		if len(ops) == closeAt {
			ops = append(ops, op{kind: opClose})
			continue
		}
		ops = append(ops, g.next(false)...)
	}
	return ops
}

// next draws one operation, or a burst of Adds that makes large batches.
// Before the first list, no events are drawn if noEvents is set.
func (g *opGen) next(noEvents bool) []op {
	type weighted struct {
		w    int
		kind opKind
	}
	table := []weighted{
		{14, opAdd}, {12, opUpdate}, {10, opDelete}, {5, opReplace}, {4, opResync},
		{18, opPop}, {1, opPhantom}, {2, -1}, // -1: a burst of Adds
	}
	if g.cfg.batches {
		table = append(table, weighted{18, opPopBatch})
	}
	if g.cfg.bookmarks {
		table = append(table, weighted{4, opBookmark})
	}
	total := 0
	for _, e := range table {
		if noEvents && (e.kind == opAdd || e.kind == opUpdate || e.kind == opDelete || e.kind == -1) {
			continue
		}
		total += e.w
	}
	n := g.rng.IntN(total)
	var kind opKind
	for _, e := range table {
		if noEvents && (e.kind == opAdd || e.kind == opUpdate || e.kind == opDelete || e.kind == -1) {
			continue
		}
		if n < e.w {
			kind = e.kind
			break
		}
		n -= e.w
	}

	switch kind {
	case -1:
		burst := make([]op, 0, g.cfg.keys)
		for _, k := range g.rng.Perm(g.cfg.keys) {
			g.val++
			burst = append(burst, op{kind: opAdd, obj: testObj{Key: fmt.Sprintf("ns/k%02d", k), Val: g.val}})
		}
		return burst
	case opAdd, opUpdate, opDelete:
		return []op{{kind: kind, obj: g.obj()}}
	case opReplace:
		return []op{{kind: kind, list: g.list(), rv: fmt.Sprint(g.rng.IntN(1000))}}
	case opBookmark:
		return []op{{kind: kind, rv: fmt.Sprint(g.rng.IntN(1000))}}
	case opPop, opPopBatch:
		return []op{{kind: kind, fail: g.rng.IntN(10) == 0}}
	case opPhantom:
		var err error
		if g.rng.IntN(2) == 0 {
			err = errLookup
		}
		return []op{{kind: kind, key: fmt.Sprintf("ns/k%02d", g.rng.IntN(g.cfg.keys)), err: err}}
	}
	return []op{{kind: kind}}
}

// errClass names what an error means to a caller, which is what the
// differential tests compare: messages differ between client-go and us.
// client-go formats some causes with %v instead of wrapping them, so a
// cause is also recognised by its message; ours must wrap (see
// TestErrorsWrapCauses).
func errClass(err error) string {
	has := func(cause error) bool {
		return errors.Is(err, cause) || strings.Contains(err.Error(), cause.Error())
	}
	switch {
	case err == nil:
		return "nil"
	case err == cache.ErrFIFOClosed: // identity, not errors.Is: callers may compare with ==
		return "closed"
	case has(errProcess):
		return "process"
	case has(errTransform):
		return "transform"
	case has(errNoKey) || has(errBrokenObject):
		return "key"
	}
	return "unexpected: " + err.Error()
}

// fullCheck says whether to compare the queues' whole contents, n Deltas or
// keys, after step i, op o: after the operations that compute what they
// enqueue, and every few steps, fewer the longer the queue. Comparing after
// every step would cost most of the test's time under the race detector;
// what the others enqueue is compared when popped.
func fullCheck(i int, o op, n int) bool {
	switch o.kind {
	case opReplace, opResync, opClose:
		return true
	case opDelete:
		return n <= 256
	}
	if n > 256 {
		return i%256 == 0
	}
	return i%8 == 0
}

// knownChecked says whether to compare the consumers' KnownObjects after o:
// only popping and Phantom change them.
func knownChecked(o op) bool {
	return o.kind == opPop || o.kind == opPopBatch || o.kind == opPhantom
}

// history formats the last operations before a mismatch.
func history(ops []op, at int) string {
	var b strings.Builder
	for i := max(0, at-15); i <= at && i < len(ops); i++ {
		fmt.Fprintf(&b, "\n  %4d %v", i, ops[i])
	}
	return b.String()
}
