#!/usr/bin/perl
# docs/openapi.yaml passes a standard linter (SPEC 18, issue 41): Redocly's CLI, pinned in
# t/openapi/package.json and its lock file and installed by `npm ci` into
# t/openapi/node_modules (git-ignored, kept between runs), with its recommended rules
# (t/openapi/redocly.yaml): no error and no warning. It lints a document, not code, so it
# runs in the plain `make test` pass only (CI's caches-off and ASan passes skip it).
use strict;
use warnings;
use lib 't/lib';
use Fcntl qw(:flock);
use Test::More;
use SvcTest;

plan skip_all => 'lints a document, not code: runs in the plain make test pass only'
    if SvcTest::cache_off() || (SvcTest::build() =~ m{/build-asan/?$});
my $dir = SvcTest::repo() . '/t/openapi';
my $bin = "$dir/node_modules/.bin/redocly";
ok `command -v node 2>/dev/null`, 'node is installed (scripts/install-deps: nodejs)' or BAIL_OUT('no node');
{
    # one npm ci at a time (prove -j2, or two worktrees' suites)
    open my $lock, '>>', "$dir/.npm.lock" or die "lock: $!";
    flock $lock, LOCK_EX;
    unless (-x $bin) {
        my $out = `cd '$dir' && npm ci --no-audit --no-fund --loglevel=error 2>&1`;
        is $?, 0, 'npm ci installed the pinned @redocly/cli' or diag $out;
    }
}
ok -x $bin, 'redocly is there' or BAIL_OUT('no redocly');
my $out = `cd '$dir' && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true timeout 120 '$bin' lint --config redocly.yaml ../../docs/openapi.yaml 2>&1`;
is $? >> 8, 0, 'redocly lint docs/openapi.yaml: no error' or diag $out;
unlike $out, qr/\bwarnings?\b/i, 'and no warning' or diag $out;
like $out, qr/valid/, 'it says the document is valid' or diag $out;
done_testing;
