// skid_buffer: a two-entry valid/ready register stage.
//
// Every output (data_out, data_out_valid, data_in_ready) comes straight from a
// flip-flop, so the stage cuts both the forward (data/valid) and the backward
// (ready) combinational paths. With data_out_ready held high it moves one beat
// per cycle. When the consumer stalls, the beat that was already accepted in
// that cycle is parked in the spare register and data_in_ready drops on the
// next edge; the spare drains first as soon as the consumer is ready again.
`timescale 1ns / 1ps
module skid_buffer #(
    parameter int DATA_WIDTH = 32
) (
    input  logic                  clk,
    input  logic                  rst,
    input  logic [DATA_WIDTH-1:0] data_in,
    input  logic                  data_in_valid,
    output logic                  data_in_ready,
    output logic [DATA_WIDTH-1:0] data_out,
    output logic                  data_out_valid,
    input  logic                  data_out_ready
);
  logic [DATA_WIDTH-1:0] spare;
  logic                  spare_valid;

  // The input side is open exactly while the spare register is empty.
  assign data_in_ready = !spare_valid;

  always_ff @(posedge clk) begin
    if (rst) begin
      data_out_valid <= 1'b0;
      spare_valid    <= 1'b0;
    end else if (data_out_ready || !data_out_valid) begin
      // The output register is free (empty or handing its beat over now).
      if (spare_valid) begin
        data_out       <= spare;
        data_out_valid <= 1'b1;
        spare_valid    <= 1'b0;
      end else begin
        data_out       <= data_in;
        data_out_valid <= data_in_valid;
      end
    end else if (data_in_valid && !spare_valid) begin
      // Output stalled: keep the beat accepted this cycle aside.
      spare       <= data_in;
      spare_valid <= 1'b1;
    end
  end
endmodule
