#!/usr/bin/perl
# Bearer auth (SPEC 4.0): configured token (api_token or the env var named by
# api_token_env), 401 missing_token / invalid_token, health open, token never echoed/logged.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;

my $TOKEN = 'tok-Sup3r-s3cret-value';

for my $how ('config', 'env') {
    my $s = $how eq 'config'
        ? SvcTest->start(config => "server:\n  api_token: \"$TOKEN\"\n")
        : SvcTest->start(config => "server:\n  api_token_env: MY_SVC_TOKEN\n",
                         env => { MY_SVC_TOKEN => $TOKEN });
    my @seen;
    my $req = sub { my $r = $s->req(@_); push @seen, $r; $r };

    my $r = $req->(GET => '/api/health');
    is $r->{status}, 200, "$how: health needs no token";

    for my $p ('/api/config', '/api/jobs', '/api/extensions', '/api/v1/chat/sessions', '/api/nope') {
        $r = $req->(GET => $p);
        is $r->{status}, 401, "$how: GET $p without token: 401";
        is $r->{json}{error}{code}, 'missing_token', 'missing_token';
        is $r->{json}{error}{type}, 'authentication_error', 'authentication_error';
    }
    $r = $req->(POST => '/api/chat', body => { messages => [{ role => 'user', content => 'hi' }] });
    is $r->{status}, 401, "$how: chat without token: 401";
    ok !-d $s->root || !glob($s->root . '/session_*'), 'no session created without token';

    $r = $req->(GET => '/api/config', headers => { authorization => 'Bearer wrong-token' });
    is $r->{status}, 401, "$how: wrong token: 401";
    is $r->{json}{error}{code}, 'invalid_token', 'invalid_token';
    $r = $req->(GET => '/api/config', headers => { authorization => "Bearer ${TOKEN}x" });
    is $r->{json}{error}{code}, 'invalid_token', 'token with a suffix: invalid_token';
    $r = $req->(GET => '/api/config', headers => { authorization => "Basic $TOKEN" });
    is $r->{status}, 401, 'another scheme: 401';
    $r = $req->(GET => '/api/config', headers => { authorization => 'Bearer ' });
    is $r->{status}, 401, 'empty bearer: 401';

    $r = $req->(GET => '/api/config', headers => { authorization => "Bearer $TOKEN" });
    is $r->{status}, 200, "$how: right token: 200";
    $r = $req->(GET => '/api/config', headers => { authorization => "bearer $TOKEN" });
    is $r->{status}, 200, 'scheme is case-insensitive';
    is $r->{json}{server}{api_token}, '***', 'token in force (file or environment) shown as ***';
    $r = $req->(POST => '/api/chat', headers => { authorization => "Bearer $TOKEN" },
                body => { messages => [{ role => 'user', content => 'hi' }] });
    is $r->{status}, 200, "$how: chat with token: 200";
    $r = $req->(GET => '/api/health', headers => { authorization => 'Bearer wrong' });
    is $r->{status}, 200, 'health ignores a wrong token';

    ok !(grep { ($_->{body} // '') =~ /\Q$TOKEN\E/ } @seen), "$how: token never in a response body";
    ok !(grep { my $h = $_->{headers}; grep { /\Q$TOKEN\E/ } map { ref $_ ? @$_ : $_ } values %$h } @seen),
        "$how: token never in a response header";
    $s->stop;
    unlike $s->log, qr/\Q$TOKEN\E/, "$how: token never in the serve/fcgi log";
    like $s->log, qr{GET /api/config 401}, 'the 401s are logged';
}

# auth off: everything open
my $s = SvcTest->start;
is $s->req(GET => '/api/config')->{status}, 200, 'no token configured: config open';
is $s->req(GET => '/api/jobs', headers => { authorization => 'Bearer whatever' })->{status}, 200,
   'a token sent to an open server is ignored';
$s->stop;

done_testing;
