package store

import "context"

// TenantLister is part of every Store, for fair lanes (see
// relay.Lane.FairTenants): the named tenants that have claimable rows in a
// scope, so that a claim can share its batch between them instead of
// taking the oldest rows of the lane, which a tenant with a large backlog
// would fill every batch with.
type TenantLister interface {
	// ClaimableTenants returns, in name order, at most limit tenants other
	// than the default ("") that have claimable rows in s (pending and due,
	// or in flight with their lease run out), among the rows of s's type
	// filters. s.Tenant must be empty. A plain read, no locks.
	ClaimableTenants(ctx context.Context, s Scope, limit int) ([]string, error)
}

// TenantSkipLister is an optional Store ability: listing the
// tenants with claimable rows while stepping over named ones without
// reading their index entries. A fair lane's express worker lists often
// and has no use for the busy tenants; on a store whose index keeps dead
// entries at the front of a busy tenant's range until vacuum (PostgreSQL),
// stepping into that range is most of a list's time. Without it the worker
// lists every tenant (ClaimableTenants) and sets the busy ones aside itself.
type TenantSkipLister interface {
	// ClaimableTenantsExcept is ClaimableTenants without the tenants in
	// skip: in name order, at most limit of the others.
	ClaimableTenantsExcept(ctx context.Context, s Scope, limit int, skip []string) ([]string, error)
}
