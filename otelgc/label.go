package otelgc

// Other is the group label value of every group that the allowlist leaves
// out, whose value is empty or not valid UTF-8, or that comes after the cap
// on distinct values is reached.
const Other = "_other"

// DefaultMaxGroupValues is the cap on distinct group label values when
// Options.MaxGroupValues is 0.
const DefaultMaxGroupValues = 100
