package retrybudget

import "strings"

// pathHasPrefix reports whether the URL path starts with a Route's
// PathPrefix, in which a segment written as a name in braces ("{id}")
// stands for any one non-empty path segment, as in net/http's
// ServeMux patterns: "/v2/checkout/orders/{id}/capture" matches
// "/v2/checkout/orders/5O190127TN364715T/capture". Braces elsewhere are
// literal.
func pathHasPrefix(path, prefix string) bool {
	for {
		i := strings.Index(prefix, "/{")
		if i < 0 {
			return strings.HasPrefix(path, prefix)
		}
		end := strings.IndexByte(prefix[i:], '}')
		if end < 0 || strings.IndexByte(prefix[i+1:i+end], '/') >= 0 ||
			(i+end+1 < len(prefix) && prefix[i+end+1] != '/') {
			// Not a whole segment in braces: compare it literally.
			if !strings.HasPrefix(path, prefix[:i+2]) {
				return false
			}
			path, prefix = path[i+2:], prefix[i+2:]
			continue
		}
		if !strings.HasPrefix(path, prefix[:i+1]) {
			return false
		}
		path = path[i+1:]
		seg := strings.IndexByte(path, '/')
		if seg < 0 {
			seg = len(path)
		}
		if seg == 0 {
			return false
		}
		path, prefix = path[seg:], prefix[i+end+1:]
	}
}
