package scheduler

// ClaimHead is the number of claim.lua's own arguments, for the external
// tests that tell claim calls apart by their shape.
const ClaimHead = claimHead
