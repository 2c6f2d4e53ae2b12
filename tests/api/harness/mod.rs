//! What a test harness needs of the server: fixtures applied at start, and a reset
//! between tests that puts them back and makes informers relist.

mod fixtures;
