#!/usr/bin/perl
# The README's and docs/OPS.md's curl examples work as written (issue 35, item 3): each
# `curl` line of their indented examples is run, the port changed to a test server's, and
# must be answered 2xx (a body sent with -d alone, a form type, would be 415), or the 403
# session_archived the README's walkthrough shows on purpose. No
# example is copied into this test: a new one is covered, a broken one fails here.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp ();
use SvcTest;

my $s = SvcTest->start(config => "sessions:\n  export_default_dir: DIR\n" =~ s/DIR/File::Temp::tempdir(CLEANUP => 1)/er);
my $port = $s->port;
my $dir = File::Temp::tempdir(CLEANUP => 1);    # where -OJ writes

for my $doc ('README', 'docs/OPS.md') {
    my $text = SvcTest::read_file(SvcTest->repo . "/$doc") // '';
    my @lines = $text =~ /^ {4}(curl [^\n]*localhost:8080[^\n]*)$/mg;
    cmp_ok(scalar @lines, '>=', 3, "$doc: curl examples found") or next;
    for my $cmd (@lines) {
        (my $run = $cmd) =~ s/\s+#.*$//;                 # a trailing comment
        $run =~ s/localhost:8080/localhost:$port/g;
        $run =~ s/^curl /curl -w ' HTTP=%{http_code}' /;
        my $out = `cd '$dir' && $run 2>&1`;
        like($out, qr/ HTTP=2\d\d$|"code":"session_archived".* HTTP=403$/s, "$doc: $cmd") or diag($out);
    }
}

done_testing;
