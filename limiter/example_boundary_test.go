package limiter_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/retrybudget/retrybudget/limiter"
)

// ByCredential keys the limit by host and a hash of the Authorization
// header: each API key gets its own boundary, and the key itself never
// appears in the boundary.
func ExampleByCredential() {
	boundary := limiter.ByCredential()
	req, _ := http.NewRequest("POST", "https://API.example.com/v1/charges", nil)
	req.Header.Set("Authorization", "Bearer sk_live_secret")
	key := boundary(req)
	fmt.Println(key)
	fmt.Println(strings.Contains(key, "sk_live_secret"))

	other, _ := http.NewRequest("GET", "https://api.example.com/v1/charges", nil)
	other.Header.Set("Authorization", "Bearer sk_live_other")
	fmt.Println(boundary(other) == key)
	// Output:
	// api.example.com#25f5417b3d9e0583169baa0d2463ec7e
	// false
	// false
}

// ByHeader is for providers that take the API key in a header of their own.
func ExampleByHeader() {
	boundary := limiter.ByHeader("X-Api-Key")
	req, _ := http.NewRequest("GET", "https://api.example.com/v2/items", nil)
	req.Header.Set("X-Api-Key", "k-123")
	fmt.Println(boundary(req))
	anon, _ := http.NewRequest("GET", "https://api.example.com/v2/items", nil)
	fmt.Println(boundary(anon))
	// Output:
	// api.example.com#39cb338a0565a404792ca2eadb8d713f
	// api.example.com
}

// Fixed puts every request in one named boundary.
func ExampleFixed() {
	boundary := limiter.Fixed("stripe-live")
	req, _ := http.NewRequest("GET", "https://api.stripe.com/v1/balance", nil)
	fmt.Println(boundary(req))
	// Output:
	// stripe-live
}
