package limiter

import "fmt"

// cmp0 returns v, or def when v is zero.
func cmp0[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// errShare reports an invalid share field.
func errShare(field string, share float64) error {
	return fmt.Errorf("%w: %s is %v: it must be in (0, 1], such as 0.5 for half of each limit", ErrInvalidConfig, field, share)
}

// groupSpecs validates limits and share and returns the specs of a
// boundary and of one owner's share (nil without a share). cfgName, such
// as "RedisConfig.", prefixes the fields its errors name.
func groupSpecs(cfgName string, limits []Limit, share float64) (boundary, owner []spec, err error) {
	if share != 0 && !validShare(share) {
		return nil, nil, errShare(cfgName+"OwnerShare", share)
	}
	if boundary, err = specs(cfgName, limits, 1); err != nil {
		return nil, nil, err
	}
	if share != 0 && len(limits) > 0 {
		owner, _ = specs(cfgName, limits, share)
	}
	return boundary, owner, nil
}
