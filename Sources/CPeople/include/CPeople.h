// The people scene's portraits (scripts/make-people makes people.c from Fixtures/people):
// 4:2:0 planar, 8-bit, luma then U then V. Functions, not arrays: Swift would import a C
// array of 100,000 bytes as a tuple of 100,000 elements.
#ifndef REEL_CPEOPLE_H
#define REEL_CPEOPLE_H
#include <stddef.h>
/// NASA's portrait of Eileen Collins (public domain), head and shoulders, 240x300.
const unsigned char *reel_people_astronaut(size_t *count);
/// The cameraman (CC0, Lav Varshney), head in profile, 220x220.
const unsigned char *reel_people_cameraman(size_t *count);
#endif
