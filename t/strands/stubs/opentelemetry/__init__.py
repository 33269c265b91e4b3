"""A no-op stand-in for the opentelemetry API (Debian has no package of it), written for
svc's tests: just what the Strands SDK calls, recording nothing."""
