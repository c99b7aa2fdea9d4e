// Package retrybudget is an http.RoundTripper for calling third-party APIs
// (payments, messaging, SaaS) without duplicate effects and without melting
// the provider.
package retrybudget
