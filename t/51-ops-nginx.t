#!/usr/bin/perl
# Ops (issue 12): the nginx route layout as ops edit it. A prefix mount by editing one line
# (and server.base_path for web servers that cannot pass the prefix); a limit_req in
# svc/model.d/ that limits every route that calls the model and nothing else; nginx's own
# refusals (400, 403, 404 outside the app, 413, 414, 429, 500, 502, 503, 504) as svc's
# JSON error object.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use SvcTest;
use SvcOps;

my $dir = SvcOps::tmpdir();
my $home = SvcTest->make_home("server:\n  workers: 2\n");
my $pool = SvcOps::pool(home => $home, sock => "$dir/p.sock", workers => 2);
my $ups = "server unix:$dir/p.sock;";

sub chat { { session_id => $_[0], messages => [{ role => 'user', content => $_[1] }] } }

# The answer is svc's JSON error object with this status and code (from nginx or svc).
sub json_error {
    my ($r, $status, $code, $what) = @_;
    is $r->{status}, $status, "$what: $status";
    like $r->{headers}{'content-type'} // '', qr{^application/json}, "$what: JSON";
    is $r->{json} && $r->{json}{error} && $r->{json}{error}{code}, $code, "$what: code $code"
        or diag $r->{body};
    ok exists $r->{json}{error}{type} && exists $r->{json}{error}{param}
        && length($r->{json}{error}{message} // ''), "$what: the whole error object";
    like $r->{headers}{'x-request-id'} // '', qr/^[0-9a-zA-Z._-]+$/, "$what: X-Request-Id";
}

# Raw HTTP, for requests HTTP::Tiny will not send. Returns {status, body, json, headers}.
sub raw {
    my ($port, $text) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 10) or die $!;
    print $s $text;
    local $/;
    my $resp = <$s> // '';
    my ($head, $body) = split /\r\n\r\n/, $resp, 2;
    my ($st) = ($head // '') =~ /^HTTP\/1\.\d (\d+)/;
    my %h = map { /^([^:]+):\s*(.*)$/ ? (lc $1 => $2) : () } split /\r\n/, $head // '';
    return { status => $st, body => $body, headers => \%h,
             json => eval { $SvcTest::JSON->decode($body // '') } };
}

# ==== prefix mount: two edited lines (the API's mount, the dashboard's location) ====
{
    my @diff;
    my $n = SvcOps::nginx(dir => "$dir/pre", upstream => $ups,
                          edit => sub { @diff = SvcOps::edit_prefix_mount($_[0]) });
    is scalar(@diff), 4, 'the prefix mount is two edited lines' or diag join "\n", @diff;
    my $u = "http://127.0.0.1:$n->{port}";
    is SvcOps::http(GET => "$u/svc/api/health")->{status}, 200, '/svc/api/health';
    # the dashboard moved with it: its page and scripts at /svc/, whose relative api/...
    # calls reach /svc/api/...
    my $page = SvcOps::http(GET => "$u/svc/");
    is $page->{status}, 200, 'the dashboard at /svc/';
    like $page->{body} // '', qr/<script type="module" src="app\.js">/, 'its page';
    like $page->{headers}{'content-security-policy'} // '', qr/default-src 'self'/, 'with its CSP';
    for my $f (qw(app.js api.js markdown.js style.css)) {
        is SvcOps::http(GET => "$u/svc/$f")->{status}, 200, "the dashboard's $f at /svc/$f";
    }
    like SvcOps::slurp("$SvcTest::REPO/nginx/dashboard/api.js"), qr/fetch\(apiUrl\(path\)/,
        'the page fetches through apiUrl';
    my $r = SvcOps::http(POST => "$u/svc/api/chat", body => chat('pm-1', 'under a prefix'));
    is $r->{status}, 200, 'POST /svc/api/chat';
    like $r->{json}{content} // '', qr/under a prefix/, 'answered';
    my $sse = SvcOps::http(POST => "$u/svc/api/v1/chat/completions",
                           body => { %{ chat('pm-1', 'streamed') }, stream => JSON::PP::true });
    like $sse->{headers}{'content-type'} // '', qr/text\/event-stream/, 'a stream under the prefix';
    like $sse->{body} // '', qr/data: \[DONE\]/, 'to its end';
    $r = SvcOps::http(GET => "$u/svc/api/v1/chat/sessions");
    is $r->{json}{sessions}[0]{session_id}, 'pm-1', 'list under the prefix';
    $r = SvcOps::http(POST => "$u/svc/api/chat/runs", body => chat('pm-2', 'a run'));
    is $r->{status}, 202, 'POST /svc/api/chat/runs';
    my $id = $r->{json}{run_id} // '';
    ok SvcTest::wait_for(15, sub {
        (SvcOps::http(GET => "$u/svc/api/chat/runs/$id")->{json}{status} // '') eq 'done' }),
        'its record under the prefix';
    like SvcOps::http(GET => "$u/svc/api/chat/runs/$id/events")->{body} // '', qr/"type":"done"/,
        'its events under the prefix';
    json_error(SvcOps::http(GET => "$u/api/health"), 404, 'not_found',
               'the unprefixed path is outside the app');
    json_error(SvcOps::http(GET => "$u/svc/api/nope"), 404, 'not_found', 'unknown route under the prefix');
    SvcOps::stop_pid($n->{pid});

    # server.base_path: the same mount where the web server passes no prefix
    my $h2 = SvcTest->make_home("server:\n  base_path: /svc\n");
    my $p2 = SvcOps::pool(home => $h2, sock => "$dir/bp.sock", workers => 1);
    $n = SvcOps::nginx(dir => "$dir/bp", upstream => "server unix:$dir/bp.sock;", edit => sub {
        my ($d) = @_;
        my $t = SvcTest::read_file("$d/svc.conf");
        # a mount that matches any prefix and passes none: svc decides
        $t =~ s/\Q^(?<svc_base>)\/api\/\E/(?<svc_base>)\/api\//;
        $t =~ s/fastcgi_param SVC_BASE_PATH \$svc_base;//;
        SvcTest::write_file("$d/svc.conf", $t);
    });
    $u = "http://127.0.0.1:$n->{port}";
    is SvcOps::http(GET => "$u/svc/api/health")->{status}, 200, 'server.base_path: /svc/api/health';
    json_error(SvcOps::http(GET => "$u/api/health"), 404, 'not_found',
               'server.base_path: a path outside it');
    json_error(SvcOps::http(GET => "$u/svcx/api/health"), 404, 'not_found',
               'server.base_path: a longer first segment is outside it');
    SvcOps::stop_pid($n->{pid});
    SvcOps::stop_pid($p2->{pid});
}

# ==== one limit_req in svc/model.d/ covers every model route, nothing else ====
{
    my $n = SvcOps::nginx(dir => "$dir/lim", upstream => $ups,
        http => "limit_req_zone \$binary_remote_addr zone=svc_model:1m rate=1r/m;\n",
        edit => sub {
            SvcTest::write_file("$_[0]/model.d/limit.conf", "limit_req zone=svc_model;\n");
        });
    my $u = "http://127.0.0.1:$n->{port}";
    my $r = SvcOps::http(POST => "$u/api/chat", body => chat('lim-1', 'first'));
    is $r->{status}, 200, 'the first model call passes';
    for my $route ('/api/chat', '/api/v1/chat/completions', '/api/chat/runs', '/api/v1/responses',
                   '/api/responses') {
        json_error(SvcOps::http(POST => "$u$route", body => chat('lim-2', 'again')), 429,
                   'rate_limited', "limit_req in model.d limits POST $route");
    }
    is SvcOps::http(GET => "$u/api/health")->{status}, 200, 'health is not limited';
    is SvcOps::http(GET => "$u/api/v1/chat/sessions")->{status}, 200, 'listing is not limited';
    is SvcOps::http(GET => "$u/api/chat/runs/run-0000000000000000")->{status}, 404,
        'a run record is not limited (svc answers 404)';
    ok !-e "$SvcTest::REPO/nginx/model.d/limit.conf", 'the shipped model.d stays empty';
    SvcOps::stop_pid($n->{pid});

    # deny in the same place: 403 as JSON
    $n = SvcOps::nginx(dir => "$dir/deny", upstream => $ups,
        edit => sub { SvcTest::write_file("$_[0]/model.d/deny.conf", "deny all;\n") });
    $u = "http://127.0.0.1:$n->{port}";
    json_error(SvcOps::http(POST => "$u/api/v1/chat/completions", body => chat('d', 'x')), 403,
               'forbidden', 'deny in model.d');
    is SvcOps::http(GET => "$u/api/health")->{status}, 200, 'deny there leaves health alone';
    SvcOps::stop_pid($n->{pid});
}

# ==== nginx's own refusals as JSON ====
{
    my $server = "include svc/svc.conf;\ninclude svc/svc-errors.conf;\n"
        . "location = /t/500 { return 500; }\nlocation = /t/503 { return 503; }\n"
        . "location = /t/504 { return 504; }\n";
    my $n = SvcOps::nginx(dir => "$dir/err", upstream => $ups, server => $server);
    my $u = "http://127.0.0.1:$n->{port}";
    my $p = $n->{port};
    json_error(raw($p, "GET /api/health HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n"),
               400, 'bad_request', 'a duplicate Host header');
    json_error(SvcOps::http(GET => "$u/elsewhere/index.html"), 404, 'not_found', 'outside the app');
    json_error(SvcOps::http(POST => "$u/api/chat", body => 'x' x (3 * 1024 * 1024)), 413,
               'body_too_large', 'a body over client_max_body_size');
    json_error(SvcOps::http(POST => "$u/api/chat", body => 'x' x (1024 * 1024 + 10)), 413,
               'body_too_large', "a body over max_body_bytes (svc's own)");
    json_error(SvcOps::http(GET => "$u/api/" . ('a' x 9000)), 414, 'uri_too_long', 'a long URI');
    my $big = raw($p, "GET /api/health HTTP/1.1\r\nHost: a\r\nX-Big: " . ('b' x 10000)
                  . "\r\nConnection: close\r\n\r\n");
    json_error($big, 431, 'headers_too_large', 'a header over large_client_header_buffers');
    is $big->{headers}{'x-should-retry'}, 'false', 'headers too large: x-should-retry false';
    json_error(SvcOps::http(GET => "$u/t/500"), 500, 'web_server_error', "nginx's 500");
    json_error(SvcOps::http(GET => "$u/t/503"), 503, 'service_unavailable', "nginx's 503");
    json_error(SvcOps::http(GET => "$u/t/504"), 504, 'gateway_timeout', "nginx's 504");
    is SvcOps::http(GET => "$u/t/503")->{headers}{'x-should-retry'}, 'true', "nginx's 5xx: x-should-retry true";
    is SvcOps::http(GET => "$u/api/" . ('a' x 9000))->{headers}{'x-should-retry'}, 'false',
       "nginx's 4xx: x-should-retry false";
    SvcOps::stop_pid($n->{pid});

    $n = SvcOps::nginx(dir => "$dir/gone", upstream => "server unix:$dir/nobody.sock;");
    json_error(SvcOps::http(GET => "http://127.0.0.1:$n->{port}/api/health"), 502, 'bad_gateway',
               'no pool');
    SvcOps::stop_pid($n->{pid});
}

SvcOps::stop_pid($pool->{pid});
done_testing;
