package bootstrap

// Internals for the external tests.
var (
	ParseGoNote = parseGoNote
	GoBuildID   = goBuildID
)
