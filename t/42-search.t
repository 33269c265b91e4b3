#!/usr/bin/perl
# q matches titles case-insensitively in any script (SPEC 4.3): Unicode case folding and
# NFC, so "WÖRLD", "äöü", a decomposed "wörld", "STRASSE" for "Straße" and Greek final
# sigma all find their session, and nothing else matches.
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
done_testing();
