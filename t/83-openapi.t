#!/usr/bin/perl
# The OpenAPI document against the route table (SPEC 18, issue 41): `svc-fcgi --routes` and
# docs/openapi.yaml name the same routes and methods, both ways; a public route says
# `security: []` and only it; an admin route says "(admins)" in its summary; every {name} of
# a path is a path parameter of its operations. GET /api/openapi.json serves the document
# without a token (public like health), as svc's own YAML reading gives it and as PyYAML
# reads the file (the same types, so the schemas mean the same to every tool), with the
# build's VERSION and the request's base path as its server. A failure names the route
# and what to add (docs/TESTING.md, "Coverage tests").
use strict;
use warnings;
use lib 't/lib';
use JSON::PP;
use Test::More;
use SvcTest;

my $repo = SvcTest::repo();
my $B = SvcTest::build();
my $routes = `'$B/svc-fcgi' --routes 2>&1`;
is $? >> 8, 0, 'svc-fcgi --routes' or diag $routes;
my %route;
for (split /\n/, $routes) {
    my ($m, $p, @flags) = split ' ';
    $route{"$m $p"} = { map { $_ => 1 } @flags };
}
ok keys(%route) >= 40, scalar(keys %route) . ' routes';

my $token = 'openapi-test-token';
my $s = SvcTest->start(config => "server:\n  api_token: $token\n");
my $r = $s->req(GET => '/api/openapi.json');
is $r->{status}, 200, 'GET /api/openapi.json without a token: 200 (public)';
like $r->{headers}{'content-type'} // '', qr{^application/json}, 'as JSON';
my $doc = $r->{json} // {};
is $doc->{openapi}, '3.1.0', 'OpenAPI 3.1';
my $version = SvcTest::read_file("$repo/VERSION") // '';
chomp $version;
is $doc->{info}{version}, $version, 'info.version is the build\'s VERSION';
is_deeply $doc->{servers}, [{ url => '/' }], 'servers: the root';
is $s->req(GET => '/api/health')->{status}, 200, 'health stays public';
is $s->req(GET => '/api/me')->{status}, 401, 'other routes still need the token';
my $head = $s->req(HEAD => '/api/openapi.json');
is $head->{status}, 200, 'HEAD works';

# the same document as PyYAML reads the file (Debian's python3-yaml)
SKIP: {
    my $py = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
    my $json = `$py -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)' '$repo/docs/openapi.yaml' 2>&1`;
    skip "python3-yaml missing: $json", 1 if $?;
    my $file = eval { decode_json($json) } // {};
    my %served = %$doc;
    $served{info} = { %{ $doc->{info} }, version => $file->{info}{version} };
    $served{servers} = $file->{servers};
    my $canon = JSON::PP->new->canonical;
    ok $canon->encode(\%served) eq $canon->encode($file),
        'the served document is the file as PyYAML reads it (but version and servers)'
        or diag 'first difference near: ' . first_diff($canon->encode(\%served), $canon->encode($file));
}
sub first_diff {
    my ($a, $b) = @_;
    my $i = 0;
    $i++ while $i < length $a && substr($a, $i, 1) eq substr($b, $i, 1);
    return substr($a, $i > 60 ? $i - 60 : 0, 120) . "\n  vs\n" . substr($b, $i > 60 ? $i - 60 : 0, 120);
}

# both ways
my %op;
for my $p (keys %{ $doc->{paths} || {} }) {
    for my $m (keys %{ $doc->{paths}{$p} }) {
        next unless $m =~ /^(get|put|post|delete|patch|head|options|trace)$/;
        $op{ uc($m) . " $p" } = $doc->{paths}{$p}{$m};
    }
}
for my $k (sort keys %route) {
    ok $op{$k}, "docs/openapi.yaml describes $k"
        or diag "add the operation `" . lc((split ' ', $k)[0]) . "` under the path `"
        . (split ' ', $k)[1] . "` of docs/openapi.yaml (parameters, body, answers, 4XX/5XX)";
}
for my $k (sort keys %op) {
    ok $route{$k}, "$k of docs/openapi.yaml is a route of svc-fcgi --routes"
        or diag "the route table (cgi/routes.c) has no $k: remove or correct it in docs/openapi.yaml";
}
for my $k (sort grep { $op{$_} } keys %route) {
    my $o = $op{$k};
    my $public = ref $o->{security} eq 'ARRAY' && !@{ $o->{security} };
    is !!$public, !!$route{$k}{public}, "$k: " . ($route{$k}{public} ? 'public, security: []' : 'needs the token')
        or diag $route{$k}{public} ? "give $k `security: []`" : "$k is not public: remove its `security: []`";
    if ($route{$k}{admin}) {
        like $o->{summary} // '', qr/\(admins\)/, "$k: its summary says (admins)";
    }
    my @names = (split ' ', $k)[1] =~ /\{(\w+)\}/g;
    my %given;
    for my $prm (@{ $o->{parameters} || [] }) {
        my $p = $prm;
        if ($p->{'$ref'} && $p->{'$ref'} =~ m{^#/components/parameters/(\w+)$}) { $p = $doc->{components}{parameters}{$1} }
        $given{ $p->{name} } = 1 if ($p->{in} // '') eq 'path';
    }
    ok !grep({ !$given{$_} } @names), "$k: its path parameters (@names) are described"
        or diag "describe each {name} of $k as a parameter `in: path`";
}

# under a base path (the SVC_BASE_PATH parameter nginx passes), the document's server is the
# prefix: svc-fcgi as a plain CGI program
my $home = SvcTest->make_home('');
my $cgi = `env -i REQUEST_METHOD=GET REQUEST_URI=/svc/api/openapi.json SVC_BASE_PATH=/svc SVC_HOME='$home' SVC_CONFIG='$home/agents.yaml' '$B/svc-fcgi' </dev/null 2>/dev/null`;
my ($body) = $cgi =~ /\r?\n\r?\n(.*)\z/s;
my $d2 = eval { decode_json($body // '') } // {};
is_deeply $d2->{servers}, [{ url => '/svc' }], 'mounted under /svc, servers is /svc'
    or diag substr($cgi, 0, 300);
done_testing;
