package artifacts

import (
	"container/list"
	"sync"
)

// rowCache keeps recently read artifacts decoded, bounded by an estimate of
// their memory. A pipeline where a thousand nodes sample one import reads
// and verifies that import twice, not a thousand times. An artifact is
// admitted on its second read: a fan-in of ten thousand artifacts, each read
// once, would otherwise fill the cache with rows nobody reads again.
type rowCache struct {
	mu    sync.Mutex
	limit int64
	used  int64
	order *list.List // front = most recent; values are *cacheEntry
	items map[Digest]*list.Element
	seen  map[Digest]bool // read once, not admitted yet
}

type cacheEntry struct {
	r    *Reader
	cost int64
}

func newRowCache(limit int64) *rowCache {
	return &rowCache{limit: limit, order: list.New(), items: map[Digest]*list.Element{}, seen: map[Digest]bool{}}
}

func (c *rowCache) get(d Digest) *Reader {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[d]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cacheEntry).r
	}
	return nil
}

func (c *rowCache) put(r *Reader, cost int64) {
	if cost > c.limit/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[r.Object.Digest]; ok {
		return
	}
	if !c.seen[r.Object.Digest] {
		if len(c.seen) >= 1<<16 {
			clear(c.seen)
		}
		c.seen[r.Object.Digest] = true
		return
	}
	delete(c.seen, r.Object.Digest)
	c.items[r.Object.Digest] = c.order.PushFront(&cacheEntry{r, cost})
	c.used += cost
	for c.used > c.limit {
		e := c.order.Back()
		ce := e.Value.(*cacheEntry)
		c.order.Remove(e)
		delete(c.items, ce.r.Object.Digest)
		c.used -= ce.cost
	}
}

func (c *rowCache) drop(d Digest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[d]; ok {
		c.used -= e.Value.(*cacheEntry).cost
		c.order.Remove(e)
		delete(c.items, d)
	}
}
