// fixed_dot_product: combinational, exact dot product of PARALLELISM signed
// integers. Products are IN_WIDTH + WEIGHT_WIDTH bits wide and the sum gets
// $clog2(PARALLELISM) extra bits, so no input can overflow OUT_WIDTH.
// Fixed-point scaling is left to the caller: the result's fraction width is
// the sum of the two input fraction widths.
`timescale 1ns / 1ps
module fixed_dot_product #(
    parameter int IN_WIDTH     = 8,
    parameter int WEIGHT_WIDTH = 8,
    parameter int PARALLELISM  = 4,
    parameter int OUT_WIDTH    = IN_WIDTH + WEIGHT_WIDTH + $clog2(PARALLELISM)
) (
    input  logic [    IN_WIDTH-1:0] data_in[PARALLELISM-1:0],
    input  logic [WEIGHT_WIDTH-1:0] weight [PARALLELISM-1:0],
    output logic [   OUT_WIDTH-1:0] data_out
);
  localparam int PROD_WIDTH = IN_WIDTH + WEIGHT_WIDTH;

  logic signed [PROD_WIDTH-1:0] product[PARALLELISM-1:0];
  logic signed [ OUT_WIDTH-1:0] sum;

  always_comb begin
    sum = '0;
    for (int i = 0; i < PARALLELISM; i++) begin
      product[i] = PROD_WIDTH'($signed(data_in[i])) * PROD_WIDTH'($signed(weight[i]));
      sum = sum + OUT_WIDTH'(product[i]);
    end
  end

  assign data_out = sum;
endmodule
