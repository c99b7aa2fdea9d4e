package app

import (
	"context"
	"errors"
	"sync"
)

// ErrNotFound reports that a tenant has no activation with the ID asked for.
var ErrNotFound = errors.New("activation: not found")

// Activations keeps the service's activations, each under its tenant. A
// store shared by every instance (Redis, PostgreSQL) lets any instance
// answer the Location of an activation another one created.
type Activations interface {
	// Put stores a, replacing the tenant's activation with the same ID.
	Put(ctx context.Context, tenant string, a Activation) error
	// Get returns the tenant's activation id, or an error matching
	// ErrNotFound.
	Get(ctx context.Context, tenant, id string) (Activation, error)
}

// MemoryActivations keeps activations in this process only.
type MemoryActivations struct {
	mu sync.Mutex            // guards m
	m  map[string]Activation // by tenant and ID
}

// NewMemoryActivations returns an empty MemoryActivations.
func NewMemoryActivations() *MemoryActivations {
	return &MemoryActivations{m: map[string]Activation{}}
}

// Put implements Activations.
func (s *MemoryActivations) Put(_ context.Context, tenant string, a Activation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[tenant+"/"+a.ID] = a
	return nil
}

// Get implements Activations.
func (s *MemoryActivations) Get(_ context.Context, tenant, id string) (Activation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.m[tenant+"/"+id]
	if !ok {
		return Activation{}, ErrNotFound
	}
	return a, nil
}
