// WindowDedup: the in-process window the design guides write, in their shape: an LRU of
// container/list (a repeat moves to the front), optionally a bits-and-blooms Bloom filter behind it
// whose "maybe" means skip (lru-bloom), or a Bloom filter first whose "maybe" a bounded
// insertion-ordered set decides (bloom-exact). dedupctl's memory: layouts must predict, id for id,
// what this code applies and drops.
package main

import (
	"container/list"

	"github.com/bits-and-blooms/bloom/v3"
)

type WindowDedup struct {
	layout   string
	capacity int
	order    *list.List
	cache    map[string]*list.Element
	filter   *bloom.BloomFilter
	inserted *list.List          // bloom-exact: oldest insert at the front
	exact    map[string]struct{} // bloom-exact: the bounded set
}

func NewWindowDedup(layout string, capacity int, bloomItems uint, bloomFP float64) *WindowDedup {
	w := &WindowDedup{layout: layout, capacity: capacity, order: list.New(), cache: map[string]*list.Element{},
		inserted: list.New(), exact: map[string]struct{}{}}
	if layout != "lru" {
		w.filter = bloom.NewWithEstimates(bloomItems, bloomFP)
	}
	return w
}

// IsDuplicate says whether to skip the event, and remembers its id as the guide's code does.
func (w *WindowDedup) IsDuplicate(id string) bool {
	if w.layout == "bloom-exact" {
		if w.filter.TestString(id) {
			if _, ok := w.exact[id]; ok {
				return true
			}
		}
		w.filter.AddString(id)
		w.exact[id] = struct{}{}
		w.inserted.PushBack(id)
		if w.inserted.Len() > w.capacity {
			oldest := w.inserted.Front()
			w.inserted.Remove(oldest)
			delete(w.exact, oldest.Value.(string))
		}
		return false
	}
	if elem, ok := w.cache[id]; ok {
		w.order.MoveToFront(elem)
		return true
	}
	if w.filter != nil && w.filter.TestString(id) {
		return true // probably seen
	}
	w.cache[id] = w.order.PushFront(id)
	if w.order.Len() > w.capacity {
		oldest := w.order.Back()
		w.order.Remove(oldest)
		delete(w.cache, oldest.Value.(string))
	}
	if w.filter != nil {
		w.filter.AddString(id)
	}
	return false
}
