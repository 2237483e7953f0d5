package sim

import (
	"runtime"
	"slices"
	"sync"
	"weak"
)

// sharedSet hands out values that never change once made, one per key, to every engine
// that asks while any of them still holds it. Engines of one model are often alive
// together (an explorer and the paper figures it measures, a class's sessions, a reset
// being built beside the run it replaces), and a large model's static data is tens of
// megabytes; a value no engine holds any more is collected and its key forgotten. A set
// may also hold its keep most recently asked-for values itself, for values small beside
// the time they take to make: engines built one after another (the runs of an
// experiment's grid) then make them once, not once each.
type sharedSet[K comparable, V any] struct {
	mu   sync.Mutex
	m    map[K]weak.Pointer[V]
	keep int
	held []*V // the most recently asked-for values, newest first (at most keep)
}

// get returns the value for k, making it with mk if no engine holds one. mk runs outside
// the lock; if two engines make the same value at once, both get the first one kept.
func (s *sharedSet[K, V]) get(k K, mk func() *V) *V {
	if v := s.lookup(k); v != nil {
		return v
	}
	v := mk()
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[k].Value(); old != nil {
		s.hold(old)
		return old
	}
	if s.m == nil {
		s.m = map[K]weak.Pointer[V]{}
	}
	s.m[k] = weak.Make(v)
	runtime.AddCleanup(v, s.forget, k)
	s.hold(v)
	return v
}

func (s *sharedSet[K, V]) lookup(k K) *V {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.m[k].Value()
	if v != nil {
		s.hold(v)
	}
	return v
}

// hold makes v the newest of the values the set holds itself, dropping the oldest beyond
// keep. The caller holds the lock.
func (s *sharedSet[K, V]) hold(v *V) {
	if s.keep == 0 {
		return
	}
	i := slices.Index(s.held, v)
	if i < 0 {
		if len(s.held) < s.keep {
			s.held = append(s.held, nil)
		}
		i = len(s.held) - 1
	}
	copy(s.held[1:i+1], s.held[:i])
	s.held[0] = v
}

// forget drops k once its value has been collected, unless a new one took its place.
func (s *sharedSet[K, V]) forget(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wp, ok := s.m[k]; ok && wp.Value() == nil {
		delete(s.m, k)
	}
}
