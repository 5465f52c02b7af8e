/* The one door from a test program or the bench into the engine's private
 * parts: its store (to measure commits, and to plant rows no public call
 * writes) and its test hooks (testhook.h: crash at a point, drop a wall).
 * Product code reaches the engine through bulkhead.h alone; the layering
 * test (tests/unit/test_layering.c) holds the bench to this header. */
#ifndef BH_TESTS_ENGINE_INTERNALS_H
#define BH_TESTS_ENGINE_INTERNALS_H

#include "bulkhead.h"
#include "store.h"
#include "testhook.h"

#endif
