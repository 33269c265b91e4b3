#!/usr/bin/perl
# q matches titles case-insensitively in any script (SPEC 4.3): Unicode case folding and
# NFC, so "WÖRLD", "äöü", a decomposed "wörld", "STRASSE" for "Straße" and Greek final
# sigma all find their session, and nothing else matches. A derived title is plain text cut
# at a word, and q finds the words the cut left out.
use strict;
use warnings;
use utf8;
use lib 't/lib';
use Test::More;
use Encode qw(encode_utf8);
use Unicode::Normalize qw(NFD);
use SvcTest;

my $s = SvcTest->start(workers => 2);
my %titles = (
    'u-latin'  => 'ÄÖÜ héllo wörld',
    'u-german' => 'Die Straße am Fluss',
    'u-greek'  => 'ΣΊΣΥΦΟΣ και πέτρα',
    'u-cyr'    => 'Привет МИР',
    'u-ascii'  => 'Plain ASCII Title',
    'u-decomp' => NFD('Café crème'),
);
for my $sid (sort keys %titles) {
    is $s->req(POST => '/api/chat', body => { session_id => $sid,
        messages => [{ role => 'user', content => 'hi' }] })->{status}, 200, "turn on $sid";
    is $s->req(PATCH => "/api/v1/chat/sessions/$sid", body => { title => $titles{$sid} })->{status},
        200, "title of $sid";
}

sub found {
    my ($q) = @_;
    my $enc = join '', map { sprintf '%%%02X', ord } split //, encode_utf8($q);
    my $r = $s->req(GET => "/api/v1/chat/sessions?limit=50&q=$enc");
    die "status $r->{status}" unless $r->{status} == 200;
    return join ',', sort map { $_->{session_id} } @{ $r->{json}{sessions} };
}

is found('wörld'), 'u-latin', 'wörld';
is found('WÖRLD'), 'u-latin', 'WÖRLD (non-ASCII upper case)';
is found('äöü'), 'u-latin', 'äöü finds ÄÖÜ';
is found(NFD('WÖRLD')), 'u-latin', 'a decomposed query finds a composed title';
is found('café'), 'u-decomp', 'a composed query finds a decomposed title';
is found('CRÈME'), 'u-decomp', 'upper case, decomposed title';
is found('STRASSE'), 'u-german', 'STRASSE finds Straße (full case folding)';
is found('straße'), 'u-german', 'straße';
is found('σίσυφος'), 'u-greek', 'Greek with final sigma';
is found('ΠΈΤΡΑ'), 'u-greek', 'Greek upper case';
is found('мир'), 'u-cyr', 'Cyrillic';
is found('plain ascii'), 'u-ascii', 'ASCII still folds';
is found('wörlds'), '', 'no false match';
is found('É'), 'u-decomp,u-latin', 'É in two titles';

# A derived title (SPEC 2.2) leaves the Markdown out and is cut at a word with an ellipsis;
# q still finds the words the cut left out, until the session is renamed.
my $md = 'Please plan a **week-long** trip to [Lisbon](https://example.com/lisbon) with `rail` '
    . 'passes, then _Porto_ and the Douro valley';
my $plain = 'Please plan a week-long trip to Lisbon with rail passes, then Porto and the Douro valley';
is $s->req(POST => '/api/chat', body => { session_id => 'md-long',
    messages => [{ role => 'user', content => $md }] })->{status}, 200, 'turn on md-long';
my $t = $s->req(GET => '/api/v1/chat/sessions/md-long')->{json}{title} // '';
unlike $t, qr/[*_`\[\]()]|https/, 'derived title: no Markdown markup, no link target';
like $t, qr/\x{2026}\z/, 'derived title: an ellipsis where it was cut';
ok length($t) <= 48, 'derived title: at most 48 code points';
my $kept = substr($t, 0, -1);
is substr($plain, 0, length $kept), $kept, 'derived title: the plain text from its start';
like substr($plain, length $kept), qr/^[ ,]/, 'derived title: cut between words';
is found('lisbon'), 'md-long', 'q finds a word the markup surrounded';
is found('week-long trip'), 'md-long', 'q finds words inside the title';
is found('douro valley'), 'md-long', 'q finds words the cut left out';
is $s->req(PATCH => '/api/v1/chat/sessions/md-long', body => { title => 'Weekend' })->{status}, 200,
    'md-long renamed';
is found('douro'), '', 'a renamed session: q matches its new title only';
is found('weekend'), 'md-long', '... which it finds';
done_testing();
