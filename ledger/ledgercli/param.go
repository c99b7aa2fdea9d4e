package ledgercli

import "net/url"

// TakeParam removes the query parameter name from the URL raw, for an
// Opener whose driver would refuse a parameter it does not know, and
// returns the URL without it and the parameter's value ("" when absent).
func TakeParam(raw, name string) (rest, value string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", URLError(err)
	}
	q := u.Query()
	value = q.Get(name)
	q.Del(name)
	u.RawQuery = q.Encode()
	return u.String(), value, nil
}
