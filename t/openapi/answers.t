#!/usr/bin/perl
# The answers of the end-to-end tests validate against docs/openapi.yaml (SPEC 18, issue 41).
# `make test` (and `make asan`) run the suite with SVC_ANSWERS=DIR, so t/lib/SvcTest.pm
# records every answer the tests get (req, sse, SvcOps::http), then run this file, which
# has t/openapi/validate.py (Debian's python3-yaml and python3-jsonschema) check each one
# against the schema of its operation, status and media type. Each kind of mismatch is a
# failed test naming the route, the status, what is wrong and the tests that saw it.
# By hand: SVC_ANSWERS=/tmp/a prove t/15-sessions.t; SVC_ANSWERS=/tmp/a prove t/openapi/answers.t
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;

my $dir = $ENV{SVC_ANSWERS};
plan skip_all => 'SVC_ANSWERS is not set (make test sets it for the suite, then runs this)'
    unless $dir;
my @files = glob "$dir/*.jsonl";
ok @files, "answers were recorded in $dir" or BAIL_OUT('no answers: is the hook in t/lib/SvcTest.pm?');
my $repo = SvcTest::repo();
my $py = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
my $out = `$py '$repo/t/openapi/validate.py' '$repo/docs/openapi.yaml' '$dir' 2>&1`;
my $rc = $? >> 8;
my @mismatch = $out =~ /^MISMATCH (.*)$/mg;
ok 0, $_ for @mismatch;
my ($summary) = $out =~ /^SUMMARY (.*)$/m;
ok defined $summary, 'the validator ran to its end' or diag $out;
note $summary if $summary;
is $rc, @mismatch ? 1 : 0, 'its exit status' or diag $out;
my ($validated) = ($summary // '') =~ /(\d+) validated/;
cmp_ok $validated // 0, '>', 0, 'some answers were validated';
done_testing;
